"""Renewal and CA rotation rules of webhook.tls.bundle, with the clock as an explicit argument."""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.certs.helpers import SERVICE_NAMES, verify_chain
from webhook.tls.bundle import BundleError, CertSet, Renewal, from_files, renew, service_hosts
from webhook.tls.certgen import CA_FILE, CA_KEY_FILE, CERT_FILE, KEY_FILE, make_ca, make_serving

NOW = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
"""An hour ahead: certificates made later in the run (valid from five minutes before they are
made) are still valid at NOW however long the suite takes to reach these tests."""
DAY = dt.timedelta(days=1)
PLAN = Renewal(hosts=service_hosts("gpu-webhook", "gpu-webhook"))


def _serial(certs: CertSet) -> int:
    assert certs.serving is not None
    return certs.serving.certificate.serial_number


def _set_with(ca_days: int, serving_days: int, hosts: tuple[str, ...] = PLAN.hosts) -> CertSet:
    ca = make_ca(days=ca_days)
    return CertSet((ca.certificate,), ca.key, make_serving(ca, hosts, serving_days))


def test_service_hosts_are_the_four_in_cluster_names_then_extras() -> None:
    assert service_hosts("gpu-webhook", "gpu-webhook") == SERVICE_NAMES
    extended = service_hosts("s", "n", ["10.0.0.1", "s"])
    assert extended == ("s", "s.n", "s.n.svc", "s.n.svc.cluster.local", "10.0.0.1")


def test_a_fresh_set_has_a_ca_and_a_serving_certificate_for_every_name() -> None:
    outcome = renew(CertSet(), PLAN, NOW)
    certs = outcome.certs
    assert len(outcome.changes) == 2 and len(certs.authorities) == 1 and certs.signer() is not None
    files = certs.files()
    assert set(files) == {CA_FILE, CA_KEY_FILE, CERT_FILE, KEY_FILE}
    for host in SERVICE_NAMES:
        verify_chain(files[CERT_FILE], files[CA_FILE], host)


def test_nothing_is_due_twice_in_a_row() -> None:
    first = renew(CertSet(), PLAN, NOW).certs
    again = renew(first, PLAN, NOW)
    assert again.changes == () and again.certs == first


def test_serving_certificate_renews_within_the_threshold_under_the_same_ca() -> None:
    certs = renew(CertSet(), PLAN, NOW).certs
    assert renew(certs, PLAN, NOW + 330 * DAY).changes == ()
    later = renew(certs, PLAN, NOW + 340 * DAY)
    assert len(later.changes) == 1
    assert later.certs.authorities == certs.authorities and _serial(later.certs) != _serial(certs)
    verify_chain(later.certs.files()[CERT_FILE], later.certs.bundle_pem(), SERVICE_NAMES[2], NOW + 340 * DAY)


def test_ca_rotation_keeps_both_cas_until_the_old_one_expires() -> None:
    old = _set_with(ca_days=60, serving_days=50)
    old_ca = old.authorities[0]

    # Phase 1: the CA is within 90 days of its end. A new CA joins; tls.crt stays as it is.
    phase1 = renew(old, PLAN, NOW).certs
    assert phase1.authorities[0] == old_ca and len(phase1.authorities) == 2
    assert phase1.signer() == phase1.authorities[1] and _serial(phase1) == _serial(old)
    verify_chain(phase1.files()[CERT_FILE], phase1.bundle_pem(), SERVICE_NAMES[2])
    assert renew(phase1, PLAN, NOW).changes == ()

    # Phase 2: the serving certificate is due; it moves to the new CA, the old CA stays trusted.
    when = NOW + 25 * DAY
    phase2 = renew(phase1, PLAN, when).certs
    assert phase2.authorities == phase1.authorities and _serial(phase2) != _serial(phase1)
    assert phase2.serving is not None and phase2.serving.certificate.issuer == phase1.authorities[1].subject
    verify_chain(phase2.files()[CERT_FILE], phase2.bundle_pem(), SERVICE_NAMES[2], when)
    verify_chain(phase1.files()[CERT_FILE], phase2.bundle_pem(), SERVICE_NAMES[2], when)

    # Phase 3: the old CA has expired and leaves the bundle; nothing else changes.
    phase3 = renew(phase2, PLAN, NOW + 61 * DAY)
    assert phase3.certs.authorities == (phase1.authorities[1],) and len(phase3.changes) == 1
    assert _serial(phase3.certs) == _serial(phase2)


def test_ca_and_serving_due_together_rotate_in_one_run() -> None:
    old = _set_with(ca_days=60, serving_days=20)
    outcome = renew(old, PLAN, NOW)
    assert len(outcome.certs.authorities) == 2 and len(outcome.changes) == 2
    verify_chain(outcome.certs.files()[CERT_FILE], outcome.certs.bundle_pem(), SERVICE_NAMES[3])


def test_serving_certificate_never_outlives_its_ca() -> None:
    ca = make_ca(days=100)
    certs = CertSet((ca.certificate,), ca.key, None)
    plan = Renewal(PLAN.hosts, ca_renew_before=30 * DAY, renew_before=10 * DAY)
    serving = renew(certs, plan, NOW).certs.serving
    assert serving is not None
    assert serving.certificate.not_valid_after_utc <= ca.certificate.not_valid_after_utc


@pytest.mark.parametrize("change", ["hosts", "key", "foreign-ca"])
def test_serving_certificate_is_reissued_when_it_no_longer_fits(change: str) -> None:
    certs = renew(CertSet(), PLAN, NOW).certs
    assert certs.serving is not None
    plan = PLAN
    if change == "hosts":
        plan = Renewal((*PLAN.hosts, "10.1.2.3"))
    elif change == "key":
        other = make_serving(make_ca(), PLAN.hosts)
        certs = CertSet(certs.authorities, certs.ca_key, type(other)(certs.serving.certificate, other.key))
    else:
        certs = CertSet(certs.authorities, certs.ca_key, make_serving(make_ca(), PLAN.hosts))
    outcome = renew(certs, plan, NOW)
    assert len(outcome.changes) == 1 and outcome.certs.authorities == certs.authorities
    verify_chain(outcome.certs.files()[CERT_FILE], outcome.certs.bundle_pem(), plan.hosts[-1])


def test_a_lost_ca_key_starts_a_new_ca_and_keeps_the_old_one_trusted() -> None:
    certs = renew(CertSet(), PLAN, NOW).certs
    without_key = CertSet(certs.authorities, None, certs.serving)
    outcome = renew(without_key, PLAN, NOW)
    assert outcome.certs.authorities[0] == certs.authorities[0] and len(outcome.certs.authorities) == 2
    assert _serial(outcome.certs) == _serial(certs), "the current serving certificate is still valid"


def test_files_round_trip() -> None:
    files = renew(CertSet(), PLAN, NOW).certs.files()
    assert from_files(files, "mem").files() == files


@pytest.mark.parametrize("broken", [CA_FILE, CA_KEY_FILE, CERT_FILE, KEY_FILE])
def test_unreadable_material_names_the_file(broken: str) -> None:
    files = dict(renew(CertSet(), PLAN, NOW).certs.files())
    files[broken] = b"-----BEGIN GARBAGE-----\nnot pem\n"
    with pytest.raises(BundleError, match=f"dir/{broken}"):
        from_files(files, "dir")


def test_non_ec_keys_are_refused_with_a_reason() -> None:
    files = dict(renew(CertSet(), PLAN, NOW).certs.files())
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    files[CA_KEY_FILE] = rsa_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(BundleError, match="EC keys only"):
        from_files(files, "dir")


def test_a_leaf_certificate_in_ca_crt_and_ca_key_is_refused_as_the_signing_ca() -> None:
    ca = make_ca()
    leaf = make_serving(ca, ["leaf.example"])
    files = dict(renew(CertSet(), PLAN, NOW).certs.files())
    files[CA_FILE], files[CA_KEY_FILE] = leaf.certificate_pem(), leaf.key_pem()
    with pytest.raises(BundleError, match=f"dir/{CA_FILE}: .*leaf.example.* is not a CA"):
        from_files(files, "dir")
    assert CertSet((leaf.certificate,), leaf.key).signer() is None


@pytest.mark.parametrize(("present", "missing"), [(CERT_FILE, KEY_FILE), (KEY_FILE, CERT_FILE)])
def test_half_a_serving_pair_is_reissued_naming_the_missing_file(present: str, missing: str) -> None:
    files = dict(renew(CertSet(), PLAN, NOW).certs.files())
    del files[missing]
    changes = renew(from_files(files, "dir"), PLAN, NOW).changes
    assert len(changes) == 1 and changes[0].endswith(f"({missing} is missing)")


def test_every_expired_ca_is_named_as_the_reason_for_a_new_one() -> None:
    when = NOW + 20 * DAY
    with_key = _set_with(ca_days=10, serving_days=5)
    changes = renew(with_key, PLAN, when).changes
    ends = f"{with_key.authorities[0].not_valid_after_utc:%Y-%m-%d}"
    assert changes[0].startswith("dropped expired CA")
    assert changes[1].endswith(f"(the CA of {CA_KEY_FILE} expired {ends})")
    assert changes[2].endswith(f"(its CA expired {ends})")
    without_key = CertSet(with_key.authorities, None, with_key.serving)
    assert renew(without_key, PLAN, when).changes[1].endswith("(every CA in the bundle has expired)")


def test_a_serving_certificate_not_valid_yet_is_reissued_as_serve_refuses_it() -> None:
    ca = make_ca()
    tomorrow = NOW + DAY
    certs = CertSet((ca.certificate,), ca.key, make_serving(ca, PLAN.hosts, 30, not_before=tomorrow))
    outcome = renew(certs, PLAN, NOW)
    assert len(outcome.changes) == 1 and outcome.certs.authorities == certs.authorities
    assert outcome.changes[0].endswith(f"(it is not valid yet (notBefore {tomorrow:%Y-%m-%d %H:%M:%S} UTC))")
    verify_chain(outcome.certs.files()[CERT_FILE], outcome.certs.bundle_pem(), SERVICE_NAMES[0], NOW)


def test_a_ca_not_valid_yet_gets_a_new_ca_that_reissues_the_serving_certificate() -> None:
    tomorrow = NOW + DAY
    future = make_ca(days=3650, not_before=tomorrow)
    certs = CertSet((future.certificate,), future.key, make_serving(future, PLAN.hosts, 300))
    outcome = renew(certs, PLAN, NOW)
    assert outcome.certs.authorities[0] == future.certificate and len(outcome.certs.authorities) == 2
    assert outcome.certs.signer() == outcome.certs.authorities[1]
    assert "(the CA is not valid yet (notBefore" in outcome.changes[0]
    assert "(its CA is not valid yet (notBefore" in outcome.changes[1]
    verify_chain(outcome.certs.files()[CERT_FILE], outcome.certs.bundle_pem(), SERVICE_NAMES[0], NOW)
    assert renew(outcome.certs, PLAN, NOW).changes == ()


def test_an_expired_serving_certificate_is_said_to_have_expired() -> None:
    certs = _set_with(ca_days=3650, serving_days=10)
    assert certs.serving is not None
    ended = certs.serving.certificate.not_valid_after_utc
    changes = renew(certs, PLAN, NOW + 20 * DAY).changes
    assert len(changes) == 1 and changes[0].endswith(f"(it expired {ended:%Y-%m-%d})")
