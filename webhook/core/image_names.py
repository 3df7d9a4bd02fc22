"""The names one container image goes by: `nvidia/cuda:12.4`, `docker.io/nvidia/cuda:12.4` and
`index.docker.io/nvidia/cuda:12.4` are the same image (as `ubuntu` is `docker.io/library/ubuntu`),
and a template's `match.images` pattern written in one form matches the others. Without this, a
registry-mirror policy that writes `docker.io/` into every image, run before the webhook is called
again, took the pod's template away. Docker's rule: the first path component names a registry
when it holds a `.` or a `:`, or is `localhost`; otherwise the image is Docker Hub's."""

from __future__ import annotations

from typing import Final

DOCKER_HUB: Final = "docker.io"
HUB_ALIASES: Final = ("docker.io/", "index.docker.io/", "registry-1.docker.io/")
_OFFICIAL: Final = "library/"
_FORMS: Final[dict[str, tuple[str, ...]]] = {}
"""Worked out once per image name: a cluster runs a few images over and over. Emptied when full."""
_FORMS_MAX: Final = 4096
MEMO_NAME_MAX: Final = 512
"""Image names longer than this are not remembered (a repository name is at most 255 characters,
a tag 128, a digest 71): each remembered entry holds up to five copies of the name."""


IMAGE_NAME_MAX: Final = 1024
"""Longer than any image reference can be (MEMO_NAME_MAX's parts, with a sha512 digest, come to
about 520 characters): such a name, which the kubelet cannot pull, is no image's and matches no
pattern. Matched, a 3 MB one (the API server takes such a body) cost 0.5 s of patterns, holding
the worker's interpreter lock, on every pod create an untrusted user sent."""


def image_forms(image: str) -> tuple[str, ...]:
    """`image` first, then the other names of the same Docker Hub image (none for another
    registry); none at all for a name longer than IMAGE_NAME_MAX."""
    if len(image) > IMAGE_NAME_MAX:
        return ()
    found = _FORMS.get(image)
    if found is None:
        found = _forms(image)
        if len(image) <= MEMO_NAME_MAX:  # a real reference is far shorter; a 2 MB one is not kept
            if len(_FORMS) >= _FORMS_MAX:
                _FORMS.clear()
            _FORMS[image] = found
    return found


def _forms(image: str) -> tuple[str, ...]:
    path = _hub_path(image)
    if path is None:
        return (image,)
    repository = path.split("@", 1)[0].split(":", 1)[0]
    if "/" not in repository:  # an official image: `ubuntu` is `library/ubuntu`
        short, full = path, _OFFICIAL + path
    elif repository.startswith(_OFFICIAL) and "/" not in repository[len(_OFFICIAL) :]:
        short, full = path[len(_OFFICIAL) :], path
    else:
        short = full = path
    names = (short, full, f"{DOCKER_HUB}/{short}", f"{DOCKER_HUB}/{full}")
    return tuple(dict.fromkeys((image, *names)))


def _hub_path(image: str) -> str | None:
    """The repository path of a Docker Hub image (`nvidia/cuda:12.4`), else None."""
    for alias in HUB_ALIASES:
        if image.startswith(alias):
            return image[len(alias) :]
    first, slash, _ = image.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return None  # another registry's
    return image
