"""Schema-valid documents -> immutable Template and Policy values, with the semantic checks
a schema cannot express (quantities, bounds, contradictions)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import translate
from typing import Any, Final

from webhook.catalog import apirules, self_reads
from webhook.core.catalog_index import has_wildcard
from webhook.core.image_names import DOCKER_HUB, HUB_ALIASES
from webhook.core.mig_reference import MODELS
from webhook.core.model import Accelerator, Bounds, Injection, Policy, Template, TemplateMatch
from webhook.core.profiles import plain_profile
from webhook.core.quantity import parse_quantity, scale_quantity
from webhook.core.resources import edit_distance
from webhook.yamlio import excerpt


class BuildError(ValueError):
    def __init__(self, path: Sequence[str | int], message: str) -> None:
        self.path = list(path)
        self.message = message
        super().__init__(message)


class Checks:
    """The problems found in one document so far. A value already reported (by the schema or
    by a check) is not judged again, nor is anything read from it: no cascades."""

    def __init__(self, covered: Iterable[Sequence[str | int]] = ()) -> None:
        self.errors: list[BuildError] = []
        self._covered = [tuple(path) for path in covered]

    def add(self, path: Sequence[str | int], message: str) -> None:
        self.errors.append(BuildError(path, message))
        self._covered.append(tuple(path))

    def clean(self, *paths: Sequence[str | int]) -> bool:
        """True when nothing at, above or under any of `paths` has been reported."""
        return not any(_related(tuple(path), covered) for path in paths for covered in self._covered)


def _related(a: tuple[str | int, ...], b: tuple[str | int, ...]) -> bool:
    size = min(len(a), len(b))
    return a[:size] == b[:size]


def read_template(data: Mapping[str, Any], source: str, checks: Checks) -> Template:
    """The Template of a document whose schema-invalid values were removed; every semantic
    problem goes to `checks`. Only a template with no problem at all may be used."""
    metadata = _object(data.get("metadata"))
    spec = _object(data.get("spec"))
    accelerator = _accelerator(_object(spec.get("accelerator")), checks)
    inject = _inject(_object(spec.get("inject")), checks)
    _check_consistency(accelerator, inject, checks)
    _check_some_slice_holds(accelerator, _object(spec.get("accelerator")).get("gpuMemory"), checks)
    _check_limits_cover_requests(accelerator, inject, checks)
    _check_api_rules(_object(spec.get("inject")), checks)
    _check_self_reads(inject, checks)
    _check_match(_object(spec.get("match")), checks)
    return Template(
        name=str(metadata.get("name", "")),
        description=str(metadata.get("description", "")).strip(),
        kind=spec.get("kind", ""),
        priority=int(spec.get("priority", 0)),
        match=_match(_object(spec.get("match"))),
        accelerator=accelerator,
        inject=inject,
        source=source,
    )


def check_policy(data: Mapping[str, Any], checks: Checks) -> None:
    """What the schema cannot say of a policy: a namespace pattern that could never match, a MIG
    profile no GPU has."""
    spec = _object(data.get("spec"))
    for field in ("namespaces", "excludedNamespaces"):
        _check_namespaces(spec.get(field), ["spec", field], checks)
    _check_profiles(
        _object(spec.get("mig")).get("allowedProfiles"), ["spec", "mig", "allowedProfiles"], checks
    )
    _check_prices(spec.get("prices"), ["spec", "prices"], checks)


def _check_prices(prices: object, path: list[str | int], checks: Checks) -> None:
    """A price is found by a node's product label (webhook/report/prices.py): a key no label value
    can be prices no GPU, and the report lists its product as unpriced without a word of why."""
    for key in _object(prices):
        problem = _product_key(key) if isinstance(key, str) else None
        if problem is not None and checks.clean([*path, key]):
            checks.add([*path, key], f"{problem}, so this price applies to no GPU")


def _product_key(key: str) -> str | None:
    if not key:
        return "a GPU product label is never empty"
    problem = apirules.label_value(key)
    if problem is None:
        return None
    dashed = "-".join(key.split())
    if dashed != key and apirules.label_value(dashed) is None:
        return f"{problem} (GPU feature discovery writes the GPU's name with '-' for spaces: {dashed})"
    return problem


def _check_profiles(profiles: object, path: list[str | int], checks: Checks) -> None:
    """An allowed profile no GPU in the reference table has allows nothing: a typo (`3g.4gb`) would
    leave out the slice meant, and every pod it would fit is denied or kept whole."""
    for index, profile in enumerate(_list(profiles)):
        if isinstance(profile, str) and profile not in KNOWN_PROFILES and checks.clean([*path, index]):
            checks.add([*path, index], _unknown_profile(profile))


KNOWN_PROFILES: Final = frozenset(str(name) for model in MODELS for name in model["profiles"])
"""Every MIG profile name of every GPU model in webhook/core/mig_reference.py."""


def _unknown_profile(profile: str) -> str:
    message = f"{excerpt(profile)} is not a MIG profile of any GPU the reference table knows"
    spelled = [name for name in KNOWN_PROFILES if name.replace("+", ".") == profile]
    if spelled:
        return f"{message}: {profile} is how a resource name spells profile {spelled[0]}; write {spelled[0]}"
    labelled = [name for name in KNOWN_PROFILES if name.replace("+", "") == profile]
    if labelled:  # the schema lets `1g.24gbgfx` through for this hint
        meant = labelled[0]
        return f"{message}: {profile} is how a product label spells profile {meant}; write {meant}"
    plain = plain_profile(profile)
    closest = _closest_profile(profile)
    near_variant = closest is not None and plain_profile(closest) == plain
    if plain != profile and plain in KNOWN_PROFILES and not near_variant:  # `3g.40gb+me`: no such variant
        variant = profile[len(plain) :]
        missing = f"no GPU it knows has a {variant} variant of {plain}"
        return f"{message}, so it allows no slice: {missing}; did you mean {plain}?"
    if closest is None:
        return f"{message} (webhook/core/mig_reference.py), so it allows no slice"
    return f"{message}, so it allows no slice; did you mean {closest}?"


def _closest_profile(profile: str) -> str | None:
    """The known profile fewest edits away (at most two), the one more GPU models have on a tie:
    `3g.4gb` is one edit from 3g.40gb, 3g.47gb and 3g.48gb, and 3g.40gb is the common one."""
    models = Counter(str(name) for model in MODELS for name in model["profiles"])
    distance, _, name = min((edit_distance(profile, name), -count, name) for name, count in models.items())
    return name if distance <= 2 else None


def _check_match(match: Mapping[str, Any], checks: Checks) -> None:
    """A template's namespaces and podSelector as the API server would read them: a pattern that
    can match no namespace name, or a selector it would refuse, matches no pod, without a word."""
    _check_namespaces(match.get("namespaces"), ["spec", "match", "namespaces"], checks)
    _check_image_patterns(match.get("images"), ["spec", "match", "images"], checks)
    _check_model_patterns(match.get("models"), ["spec", "match", "models"], checks)
    selector = _object(match.get("podSelector"))
    base: list[str | int] = ["spec", "match", "podSelector"]
    found = [(["matchLabels", *p], m) for p, m in apirules.label_map(_object(selector.get("matchLabels")))]
    for index, item in enumerate(_list(selector.get("matchExpressions"))):
        if isinstance(item, Mapping):
            found += [
                (["matchExpressions", index, *p], m) for p, m in apirules.label_selector_requirement(item)
            ]
    for path, message in found:
        if checks.clean([*base, *path]):
            checks.add([*base, *path], message)


def _check_image_patterns(patterns: object, path: list[str | int], checks: Checks) -> None:
    """Docker Hub images are matched as `nvidia/cuda` and `docker.io/nvidia/cuda`, whichever way a
    pod writes them (webhook/core/image_names.py); a pattern under another of Docker Hub's names
    would match only images written that way."""
    for index, pattern in enumerate(_list(patterns)):
        alias = next((a for a in HUB_ALIASES if isinstance(pattern, str) and pattern.startswith(a)), None)
        if alias is not None and alias != f"{DOCKER_HUB}/" and checks.clean([*path, index]):
            rest = str(pattern)[len(alias) :]
            checks.add(
                [*path, index],
                f"{excerpt(pattern)}: Docker Hub images are matched as {rest} and {DOCKER_HUB}/{rest},"
                f" however a pod writes them; write {rest}",
            )
        lower = _lower_repository(pattern) if isinstance(pattern, str) else None
        if lower is not None and checks.clean([*path, index]):
            checks.add(
                [*path, index],
                f"{excerpt(pattern)} matches no image: an image's repository path (after its registry,"
                f" before its tag) is lower case; write {lower}",
            )


def _check_model_patterns(patterns: object, path: list[str | int], checks: Checks) -> None:
    """A model is read as one word of a command line (webhook.core.served_models): a pattern
    holding whitespace (`Llama 3.1 70B`) would match no pod, without a word."""
    for index, pattern in enumerate(_list(patterns)):
        if isinstance(pattern, str) and any(c.isspace() for c in pattern) and checks.clean([*path, index]):
            checks.add(
                [*path, index],
                f"{excerpt(pattern)} matches no model: a model is one word of a command line or an"
                " env value without whitespace (meta-llama/Llama-3.1-70B*)",
            )


def _lower_repository(pattern: str) -> str | None:
    """The pattern with the upper-case letters it holds in a repository path lowered, or None
    when it holds none there. A letter after a literal `/`, with no `:`, `@` or wildcard between,
    is in a path component, which an image reference writes in lower case
    (`nvcr.io/nvidia/riva/Riva-speech*` matched no pod, without a word); one in the registry or
    a tag, or after a wildcard that could reach a tag (`*Riva*`), may match."""
    letters = list(pattern)
    in_path = False
    index = 0
    while index < len(letters):
        char = letters[index]
        if char == "[":
            start = index + 2 if pattern.startswith("[!", index) else index + 1
            close = pattern.find("]", start + 1)
            index = close if close != -1 else index
            in_path = False
        elif char in "*?:@":
            in_path = False
        elif char == "/":
            in_path = True
        elif in_path and "A" <= char <= "Z":
            letters[index] = char.lower()
        index += 1
    lowered = "".join(letters)
    return lowered if lowered != pattern else None


def _check_namespaces(patterns: object, path: list[str | int], checks: Checks) -> None:
    for index, pattern in enumerate(_list(patterns)):
        problem = apirules.namespace_pattern(pattern) if isinstance(pattern, str) and pattern else None
        if problem is not None and checks.clean([*path, index]):
            checks.add([*path, index], problem)


def read_policy(data: Mapping[str, Any], source: str) -> Policy:
    metadata = _object(data.get("metadata"))
    spec = _object(data.get("spec"))
    templates = _object(spec.get("templates"))
    mig = _object(spec.get("mig"))
    allowed = templates.get("allowed")
    profiles = mig.get("allowedProfiles")
    return Policy(
        name=str(metadata.get("name", "")),
        namespaces=_items(spec.get("namespaces")),
        excluded_namespaces=_items(spec.get("excludedNamespaces")),
        mode=spec.get("mode", "enforce"),
        allowed_templates=frozenset(_items(allowed)) if allowed is not None else None,
        default_template=templates.get("default"),
        require_template=bool(templates.get("required", False)),
        max_gpus_per_pod=_whole(spec.get("maxGpusPerPod")),
        allowed_profiles=frozenset(_items(profiles)) if profiles is not None else None,
        when_no_slice_fits=mig.get("whenNoSliceFits", "larger"),
        when_none_free=mig.get("whenNoneFree", "wait"),
        mutate_templates=spec.get("mutate", "pods") == "templates",
        prices=dict(_object(spec.get("prices"))),
        source=source,
    )


def _object(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(value: object) -> tuple[Any, ...]:
    """The members of a list, without those the schema refused (removed as None)."""
    return tuple(item for item in value if item is not None) if isinstance(value, list) else ()


def _match(match: Mapping[str, Any]) -> TemplateMatch:
    images = _items(match.get("images"))
    models = _items(match.get("models"))
    selector = _object(match.get("podSelector"))
    regex = image_regex(images) if images else None
    return TemplateMatch(
        namespaces=frozenset(_items(match.get("namespaces"))),
        match_labels=dict(_object(selector.get("matchLabels"))),
        match_expressions=_items(selector.get("matchExpressions")),
        images=images,
        image_regex=regex,
        models=models,
        model_regex=model_regex(models) if models else None,
        has_pod_selector=isinstance(match.get("podSelector"), Mapping),
    )


def image_regex(patterns: Sequence[str]) -> re.Pattern[str]:
    """One regex whose `match` says whether any glob pattern matches the whole image (fnmatchcase).

    The common shapes get simpler regexes than fnmatch.translate's: `LIT*` is a literal prefix and
    every `*LIT*` of the template goes into one scan for any of the literals, instead of a scan each.
    """
    contained: list[str] = []
    parts: list[str] = []
    for pattern in patterns:
        inner = pattern[1:-1]
        if len(pattern) > 2 and pattern[0] == pattern[-1] == "*" and not has_wildcard(inner):
            contained.append(re.escape(inner))
        elif pattern.endswith("*") and not has_wildcard(pattern[:-1]):
            parts.append(f"(?s:{re.escape(pattern[:-1])})")
        else:
            parts.append(f"(?:{translate(pattern)})")
    if contained:
        parts.append(f"(?s:.*?(?:{'|'.join(contained)}))")
    return re.compile("|".join(parts))


def model_regex(patterns: Sequence[str]) -> re.Pattern[str]:
    """One regex whose `match` says whether any glob pattern matches the whole model name, in any
    case: Hugging Face ids are written in mixed case (`meta-llama/Llama-3.1-70B-Instruct`)."""
    return re.compile("|".join(f"(?:{translate(p)})" for p in patterns), re.IGNORECASE)


ACCELERATOR: Final[list[str | int]] = ["spec", "accelerator"]
PER_GPU: Final[list[str | int]] = ["spec", "inject", "resources", "perGpu"]


def _accelerator(spec: Mapping[str, Any], checks: Checks) -> Accelerator:
    devices = _object(spec.get("devices"))
    overrides = _object(spec.get("podOverrides"))
    memory = spec.get("gpuMemory")
    return Accelerator(
        gpu=spec.get("gpu", ""),
        gpu_memory_bytes=_bytes(memory, [*ACCELERATOR, "gpuMemory"], checks) if memory is not None else None,
        compute_share=spec.get("computeShare"),
        min_devices=int(devices.get("min", 0)),
        max_devices=_whole(devices.get("max")),
        mig=spec.get("mig", "allowed"),
        memory_bounds=_bounds(overrides, "gpuMemory", _bytes, checks),
        compute_bounds=_bounds(overrides, "computeShare", _share, checks),
    )


def _bounds(overrides: Mapping[str, Any], key: str, parse: Any, checks: Checks) -> Bounds | None:
    if key not in overrides:
        return None
    raw = _object(overrides[key])
    base = [*ACCELERATOR, "podOverrides", key]
    low = parse(raw["min"], [*base, "min"], checks) if "min" in raw else None
    high = parse(raw["max"], [*base, "max"], checks) if "max" in raw else None
    if low is not None and high is not None and low > high:
        checks.add(base, f"min {raw['min']} is above max {raw['max']}")
    return Bounds(low, high)


def _bytes(value: object, path: list[str | int], checks: Checks) -> int | None:
    try:
        parsed = parse_quantity(value)
    except ValueError:
        checks.add(path, f"{excerpt(value)} is not a memory size such as 18Gi")
        return None
    if parsed <= 0:
        checks.add(path, f"{excerpt(value)} must be positive")
        return None
    if parsed < LEAST_GPU_MEMORY:
        checks.add(path, _too_little_memory(value))
        return None
    return int(parsed)


LEAST_GPU_MEMORY: Final = 2**20
"""1Mi: no GPU or slice has less, so a smaller GPU memory is a missing unit (`40` for 40Gi)."""


def _too_little_memory(value: object) -> str:
    text = str(value).strip()
    if _BARE_NUMBER.fullmatch(text) and float(text) <= 1024:  # a count of GiB with its unit left out
        return (
            f"{excerpt(value)} has no unit, so it is read as {text} bytes, below the 1Mi any GPU has;"
            f" write {text}Gi for {text} GiB"
        )
    unitless = _BARE_NUMBER.fullmatch(text) or isinstance(value, int | float)
    read = "has no unit, so it is read as bytes, below the 1Mi" if unitless else "is below 1Mi, less than"
    return f"{excerpt(value)} {read} any GPU has; write a size such as 40Gi"


_BARE_NUMBER: Final = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def _share(value: object, path: list[str | int], checks: Checks) -> float | None:
    if not isinstance(value, int | float) or not 0 < value <= 1:
        checks.add(path, f"{excerpt(value)} must be a number in (0, 1]")
        return None
    return float(value)


def _inject(spec: Mapping[str, Any], checks: Checks) -> Injection:
    resources = _object(spec.get("resources"))
    per_gpu = _object(resources.get("perGpu"))
    return Injection(
        per_gpu_requests=_scalable(_object(per_gpu.get("requests")), [*PER_GPU, "requests"], checks),
        per_gpu_limits=_scalable(_object(per_gpu.get("limits")), [*PER_GPU, "limits"], checks),
        requests={k: str(v) for k, v in _object(resources.get("requests")).items()},
        limits={k: str(v) for k, v in _object(resources.get("limits")).items()},
        tolerations=_items(spec.get("tolerations")),
        node_affinity=_items(spec.get("nodeAffinity")),
        shm_size=str(spec["shmSize"]) if "shmSize" in spec else None,
        labels=dict(_object(spec.get("labels"))),
        annotations=dict(_object(spec.get("annotations"))),
        priority_class_name=spec.get("priorityClassName"),
        runtime_class_name=spec.get("runtimeClassName"),
    )


def _scalable(values: Mapping[str, Any], path: list[str | int], checks: Checks) -> dict[str, str]:
    out = {}
    for key, value in values.items():
        try:
            scale_quantity(str(value), 2)
        except ValueError:
            checks.add([*path, key], f"{excerpt(value)} cannot be multiplied per GPU")
            continue
        out[key] = str(value)
    return out


def _check_consistency(accelerator: Accelerator, inject: Injection, checks: Checks) -> None:
    gpu, mig, devices = [*ACCELERATOR, "gpu"], [*ACCELERATOR, "mig"], [*ACCELERATOR, "devices"]
    memory, share = [*ACCELERATOR, "gpuMemory"], [*ACCELERATOR, "computeShare"]
    high = accelerator.max_devices
    if high is not None and accelerator.min_devices > high and checks.clean(devices):
        checks.add(devices, f"devices.min {accelerator.min_devices} is above devices.max {high}")
    if accelerator.gpu == "required" and high == 0 and checks.clean(gpu, [*devices, "max"]):
        checks.add([*devices, "max"], "gpu: required with devices.max 0 admits no pod")
    cpu_only = accelerator.gpu == "forbidden" and checks.clean(gpu)
    if cpu_only and accelerator.mig == "preferred" and checks.clean(mig):
        checks.add(mig, "a CPU-only template (gpu: forbidden) cannot prefer MIG")
    if cpu_only and accelerator.min_devices > 0 and checks.clean(devices):
        checks.add([*devices, "min"], "a CPU-only template (gpu: forbidden) cannot need devices")
    if cpu_only and (inject.per_gpu_requests or inject.per_gpu_limits) and checks.clean(PER_GPU):
        checks.add(PER_GPU, "a CPU-only template has no GPUs to size by")
    if (
        accelerator.mig == "preferred"
        and accelerator.gpu_memory_bytes is None
        and accelerator.compute_share is None
        and checks.clean(mig, memory, share)
    ):
        checks.add(mig, "mig: preferred needs gpuMemory or computeShare to choose a slice")


def _check_some_slice_holds(accelerator: Accelerator, written: object, checks: Checks) -> None:
    """`mig: preferred` with a gpuMemory more than the largest MIG profile of any GPU in the
    reference table holds: no slice is ever chosen, so every pod keeps whole GPUs (KeptWholeGpu),
    or is denied under a policy's `whenNoSliceFits: deny`, unless `podOverrides` lets a pod state
    a need one holds. A computeShare always fits: a
    full-GPU profile (7g, 4g on 4-slice models) has all of one GPU's compute."""
    memory, path = accelerator.gpu_memory_bytes, [*ACCELERATOR, "gpuMemory"]
    if accelerator.mig != "preferred" or memory is None or not checks.clean(path, [*ACCELERATOR, "mig"]):
        return
    model, profile, mib = LARGEST_SLICE
    bounds = accelerator.memory_bounds
    if bounds is not None and (bounds.minimum is None or bounds.minimum <= mib * 2**20):
        return  # a pod may state a need a slice holds (the gpu-memory annotation)
    if memory > mib * 2**20:
        checks.add(
            path,
            f"{excerpt(written)} is more than any MIG slice holds (the largest, {profile} of {model},"
            f" has {mib}Mi), so mig: preferred never finds a slice and every pod keeps whole GPUs,"
            " or is denied under whenNoSliceFits: deny; lower gpuMemory, or write mig: allowed",
        )


LARGEST_SLICE: Final = max(
    (
        (str(model["key"]), str(name), int(mib))
        for model in MODELS
        for name, (_, mib) in model["profiles"].items()
    ),
    key=lambda found: found[2],
)
"""(GPU model, profile, MiB) of the MIG profile with the most memory in webhook/core/mig_reference.py."""


RESOURCES: Final[list[str | int]] = ["spec", "inject", "resources"]


def _check_limits_cover_requests(accelerator: Accelerator, inject: Injection, checks: Checks) -> None:
    """An injected limit below the injected request of the same resource: the resources mutator
    never fills a limit that undercuts a request (the API server would refuse the pod), so the
    limit would be left out of every pod, or of every pod from some number of GPUs on."""
    per_gpu = [*RESOURCES, "perGpu"]
    for key, limit in inject.limits.items():
        fixed = inject.requests.get(key)
        if fixed is not None and _below(limit, fixed):
            checks.add([*RESOURCES, "limits", key], _undercut(limit, f"requests.{key} {fixed}"))
    for key, limit in inject.per_gpu_limits.items():
        request = inject.per_gpu_requests.get(key) or inject.requests.get(key)
        if request is not None and _below(limit, request):
            if key in inject.per_gpu_requests:
                message = _undercut(limit, f"perGpu.requests.{key} {request}")
            else:
                message = _undercut(limit, f"requests.{key} {request}", "into pods with few devices")
            checks.add([*per_gpu, "limits", key], message)
    for key, each in inject.per_gpu_requests.items():
        cap = inject.limits.get(key)
        if cap is None or key in inject.per_gpu_limits:
            continue
        devices = _first_undercut(each, cap)
        most = accelerator.max_devices
        if devices is not None and (most is None or devices <= most):
            checks.add(
                [*RESOURCES, "limits", key],
                f"{cap} is below perGpu.requests.{key} {each} times the devices from {devices} on:"
                f" the webhook never fills a limit below its request, so pods with {devices} or more"
                f" would get no {key} limit; give perGpu.limits.{key} instead",
            )


def _undercut(limit: str, request: str, when: str = "into any pod") -> str:
    return (
        f"{limit} is below {request}: the webhook never fills a limit below its request (the API"
        f" server would refuse the pod), so this limit would not be injected {when}"
    )


def _below(limit: str, request: str) -> bool:
    try:
        return parse_quantity(limit) < parse_quantity(request)
    except ValueError:  # reported as a quantity problem of its own
        return False


def _first_undercut(per_device: str, limit: str) -> int | None:
    """The fewest devices whose per-device request adds up to more than `limit`."""
    try:
        each, most = parse_quantity(per_device), parse_quantity(limit)
    except ValueError:
        return None
    return None if each <= 0 else int(most // each) + 1


INJECT: Final[list[str | int]] = ["spec", "inject"]


def _check_api_rules(inject: Mapping[str, Any], checks: Checks) -> None:
    """What the template injects must pass the API server's validation of a pod."""
    found: list[tuple[list[str | int], str]] = []
    found += [(["labels", *p], m) for p, m in apirules.label_map(_object(inject.get("labels")))]
    found += [
        (["annotations", *p], m) for p, m in apirules.annotation_map(_object(inject.get("annotations")))
    ]
    for field, rule in (
        ("tolerations", apirules.toleration),
        ("nodeAffinity", apirules.node_selector_requirement),
    ):
        for index, item in enumerate(_list(inject.get(field))):
            if isinstance(item, Mapping):
                found += [([field, index, *p], m) for p, m in rule(item)]
    for field in ("priorityClassName", "runtimeClassName"):
        name = inject.get(field)
        problem = apirules.dns_subdomain(name) if isinstance(name, str) else None
        if problem is not None:
            found.append(([field], problem))
    for path, message in [(p, m) for p, m in found if checks.clean([*INJECT, *p])]:
        checks.add([*INJECT, *path], message)


def _check_self_reads(inject: Injection, checks: Checks) -> None:
    """No injected key the decision reads (webhook/catalog/self_reads.py): the next decision, on
    the webhook's own output, would judge the pod differently."""
    for path, message in self_reads.reserved_keys(inject):
        if checks.clean(path):
            checks.add(path, message)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _whole(value: Any) -> Any:
    """An integer the schema admits written as `2.0` or `1e1` (JSON Schema counts those integers)
    as the int it is, so that messages say `at most 2`, not `2.0`; anything else as it is."""
    return int(value) if isinstance(value, float) and value.is_integer() else value
