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
