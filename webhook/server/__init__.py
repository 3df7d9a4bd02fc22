"""The HTTP server: the flask app factory (`app`), gunicorn's settings (`gunicorn_conf`) and the
programmatic gunicorn master (`gunicorn_app`). Nothing is imported here: the gunicorn master
must not load prometheus-client before its config has set PROMETHEUS_MULTIPROC_DIR."""
