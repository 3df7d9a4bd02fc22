# syntax=docker/dockerfile:1
# gpu-webhook: the admission webhook server (and its `certs` bootstrap command).
#   docker build -t ghcr.io/aethervirt/gpu-webhook:0.1.0 .
# The templates and policies baked in at /etc/gpu-webhook are defaults; deploy/ mounts the
# ConfigMaps over them.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# A C compiler for mypyc: the decision core is compiled (setup.py), about 3.5x as fast as the
# pure-Python sources (README, Performance of decide()).
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY webhook ./webhook
# Wheels for the package (its core compiled) and every runtime dependency; the final stage
# installs offline and needs no compiler.
RUN GPU_WEBHOOK_MYPYC=1 python -m pip wheel --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN groupadd --system --gid 10001 gpu-webhook \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin gpu-webhook
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m pip install --no-index --find-links /wheels gpu-webhook
COPY templates /etc/gpu-webhook/templates
COPY policies /etc/gpu-webhook/policies
# The default --cert-dir, writable by the webhook user: with nothing mounted here, `serve`
# generates a self-signed set in it. The default command watches a cluster (--in-cluster) and
# exits outside one; for `docker run` without a cluster, give the CMD's arguments with
# --inventory=FILE (a node list mounted into the container) in place of --in-cluster.
RUN install -d -o 10001 -g 10001 -m 0700 /etc/gpu-webhook/tls
# Numeric, so Kubernetes can check runAsNonRoot without looking the name up.
USER 10001:10001
WORKDIR /tmp
EXPOSE 8443
# `gpu-webhook` is the entrypoint so the same image runs `certs` (the deploy/ Job passes args).
ENTRYPOINT ["gpu-webhook"]
CMD ["serve", "--bind=0.0.0.0:8443", "--cert-dir=/etc/gpu-webhook/tls", "--templates=/etc/gpu-webhook/templates", "--policies=/etc/gpu-webhook/policies", "--in-cluster", "--workers=2"]
