"""The names one Docker Hub image goes by; other registries' images have one."""

from __future__ import annotations

import pytest

from webhook.core.image_names import image_forms


@pytest.mark.parametrize(
    ("image", "forms"),
    [
        ("nvidia/cuda:12.4", {"nvidia/cuda:12.4", "docker.io/nvidia/cuda:12.4"}),
        ("docker.io/nvidia/cuda:12.4", {"nvidia/cuda:12.4", "docker.io/nvidia/cuda:12.4"}),
        (
            "ubuntu:22.04",
            {
                "ubuntu:22.04",
                "library/ubuntu:22.04",
                "docker.io/ubuntu:22.04",
                "docker.io/library/ubuntu:22.04",
            },
        ),
        (
            "docker.io/library/ubuntu",
            {"ubuntu", "library/ubuntu", "docker.io/ubuntu", "docker.io/library/ubuntu"},
        ),
        ("nvcr.io/nvidia/pytorch:24.01", {"nvcr.io/nvidia/pytorch:24.01"}),
        ("localhost:5000/team/app", {"localhost:5000/team/app"}),
        ("localhost/team/app", {"localhost/team/app"}),
    ],
)
def test_the_names_of_an_image(image: str, forms: set[str]) -> None:
    found = image_forms(image)
    assert found[0] == image and set(found) == forms


def test_a_name_longer_than_any_real_reference_is_not_remembered() -> None:
    """Each remembered name is kept up to five times: 2 MB names would fill a worker's memory."""
    from webhook.core import image_names

    long_name = "team/" + "x" * 600
    assert image_forms(long_name)[0] == long_name
    assert long_name not in image_names._FORMS
    image_forms("team/app:1")
    assert "team/app:1" in image_names._FORMS


def test_a_name_longer_than_any_image_reference_is_no_images_name() -> None:
    """No pattern is matched against it: a 3 MB name cost 0.5 s of patterns per pod create."""
    from webhook.core import image_names

    assert image_forms("nvidia/cuda:" + "1" * image_names.IMAGE_NAME_MAX) == ()
    assert image_forms("nvidia/cuda:" + "1" * (image_names.IMAGE_NAME_MAX - 12))[0].startswith("nvidia/")
