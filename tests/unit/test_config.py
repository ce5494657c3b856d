import os
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from hippocampus.config import HippoSettings, parse_api_keys
from hippocampus.errors import ConfigError


def test_api_keys_bind_each_key_to_its_collections_and_star_to_all() -> None:
    keys = parse_api_keys("alpha-key-1=org:acme,persona:ada; beta-key-2=*")
    assert keys == {"alpha-key-1": frozenset({"org:acme", "persona:ada"}), "beta-key-2": None}


def test_empty_api_keys_mean_no_keys() -> None:
    assert parse_api_keys("") == {}
    assert parse_api_keys(" ; ") == {}


@pytest.mark.parametrize(
    "spec",
    [
        "no-equals-sign",
        "=org:acme",
        "short=org:acme",
        "long-enough-key=",
        "long-enough-key=bad/name",
    ],
)
def test_malformed_api_keys_are_refused(spec: str) -> None:
    with pytest.raises(ConfigError):
        parse_api_keys(spec)


def test_settings_come_from_hippo_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIPPO_PORT", "9123")
    monkeypatch.setenv("HIPPO_DATA_DIR", "/tmp/somewhere")
    monkeypatch.setenv("HIPPO_EMBEDDER", "hashing")
    monkeypatch.setenv("HIPPO_API_KEYS", "key-number-one=org:acme")
    monkeypatch.setenv("HIPPO_NEO4J__URI", "bolt://db:7687")
    monkeypatch.setenv("HIPPO_LIMITS__MAX_BATCH", "10")
    s = HippoSettings()
    assert s.port == 9123
    assert s.data_dir == Path("/tmp/somewhere")
    assert s.embedder == "hashing"
    assert s.key_map() == {"key-number-one": frozenset({"org:acme"})}
    assert s.neo4j.uri == "bolt://db:7687"
    assert s.limits.max_batch == 10


def test_settings_reject_an_unknown_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIPPO_STORE", "mongodb")
    with pytest.raises(ValueError, match="store"):
        HippoSettings()


def test_settings_keep_keys_and_passwords_out_of_repr_and_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HIPPO_API_KEYS", "s3cret-key-0001=team:alpha")
    monkeypatch.setenv("HIPPO_NEO4J__PASSWORD", "s3cret-password")
    settings = HippoSettings()
    assert settings.key_map() == {"s3cret-key-0001": frozenset({"team:alpha"})}
    assert settings.neo4j.password == "s3cret-password"
    for text in (repr(settings), str(settings), repr(settings.neo4j)):
        assert "s3cret" not in text
    monkeypatch.setenv("HIPPO_PORT", "not-a-port")
    with pytest.raises(ValidationError) as caught:
        HippoSettings(api_keys="s3cret-key-0002=team:alpha", port="s3cret-port")
    assert "s3cret" not in str(caught.value)


def test_the_event_log_retention_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert HippoSettings().events.max_age_days == 90
    monkeypatch.setenv("HIPPO_EVENTS__MAX_AGE_DAYS", "0.5")
    monkeypatch.setenv("HIPPO_EVENTS__MAX_EVENTS", "1000")
    s = HippoSettings()
    assert (s.events.max_age_days, s.events.max_events) == (0.5, 1000)
    monkeypatch.setenv("HIPPO_EVENTS__MAX_EVENTS", "-1")
    with pytest.raises(ValueError, match="max_events"):
        HippoSettings()


def test_learning_and_surfacing_are_tuned_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from hippocampus.service import Hippocampus

    for name in list(os.environ):
        if name.startswith("HIPPO_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HIPPO_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIPPO_EMBEDDER", "hashing")
    monkeypatch.setenv("HIPPO_LEARNING__CO_RETRIEVED", "5")
    monkeypatch.setenv("HIPPO_LEARNING__DECAY__UNUSED_FOR", "P30D")
    monkeypatch.setenv("HIPPO_LEARNING__DECAY__STEP", "0.1")
    monkeypatch.setenv("HIPPO_SURFACING__LEARN", "false")
    monkeypatch.setenv("HIPPO_SURFACING__MAX_INSIGHTS", "1")
    monkeypatch.setenv("HIPPO_SURFACING__THRESHOLDS", '{"debugging": 0.45}')
    service = Hippocampus.from_settings(HippoSettings())
    try:
        # The settings reach the engine that runs, not only the settings object.
        assert service.learning.co_retrieved == 5
        assert service.learning.decay.unused_for == timedelta(days=30)
        assert service.learning.decay.step == 0.1
        surfacing = service.surfacer.config
        assert surfacing.learn is False and surfacing.max_insights == 1
        assert surfacing.threshold("debugging") == 0.45
        assert surfacing.threshold("casual") == surfacing.default_threshold
    finally:
        service.close()


@pytest.mark.parametrize(
    ("name", "value", "field"),
    [
        ("HIPPO_SURFACING__MAX_INSIGHTS", "-1", "surfacing.max_insights"),
        ("HIPPO_SURFACING__THRESHOLDS", '{"debugging": 1.5}', "surfacing.thresholds.debugging"),
        ("HIPPO_SURFACING__NO_SUCH_GATE", "1", "surfacing.no_such_gate"),
        ("HIPPO_LEARNING__DECAY__FLOOR", "2", "learning.decay.floor"),
        ("HIPPO_LEARNING__FLUSH_AT", "0", "learning.flush_at"),
    ],
)
def test_a_learning_or_surfacing_setting_out_of_range_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, field: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError) as raised:
        HippoSettings()
    assert field in str(raised.value)


def test_settings_travel_whole_through_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "environ", {"HIPPO_LEARNING__DECAY__STEP": "0.02"})
    given = HippoSettings(
        store="neo4j",
        embedder="hashing",
        port=8123,
        api_keys="key-0001=a,b",
        neo4j={"uri": "bolt://db:7687", "password": "s3cret"},
        surfacing={"max_insights": 2, "thresholds": {"debugging": 0.5}},
    )
    variables = given.environment()
    assert variables["HIPPO_EMBEDDER"] == "hashing"
    monkeypatch.setattr(os, "environ", variables)
    assert HippoSettings() == given
    assert HippoSettings().learning.decay.step == 0.02


def test_the_embedded_store_takes_its_graph_threshold_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from hippocampus.stores import open_store

    monkeypatch.setenv("HIPPO_APPROXIMATE_FROM", "1234")
    settings = HippoSettings(data_dir=tmp_path)
    assert settings.approximate_from == 1234
    store = open_store(settings)
    try:
        assert store._graph_policy.approximate_from == 1234  # type: ignore[attr-defined]
        assert store._graph_policy.root == tmp_path / "graphs"  # type: ignore[attr-defined]
    finally:
        store.close()
    monkeypatch.setenv("HIPPO_APPROXIMATE_FROM", "0")
    with pytest.raises(ValidationError, match="approximate_from"):
        HippoSettings()
