"""The environment the service starts with: idle-friendly Dask settings, a user's own kept."""
from xmdata.service import service_start


def test_the_idle_friendly_dask_settings_apply_unless_the_user_set_them(monkeypatch):
    monitor = "DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL"
    for name in service_start.IDLE_FRIENDLY_DASK:
        monkeypatch.delenv(name, raising=False)
    assert service_start._idle_friendly_dask() == service_start.IDLE_FRIENDLY_DASK
    assert service_start.IDLE_FRIENDLY_DASK[monitor] == "1s"  # Dask's 100 ms was half an idle cluster's CPU
    monkeypatch.setenv(monitor, "100ms")
    chosen = service_start._idle_friendly_dask()
    assert monitor not in chosen  # the child inherits the user's 100ms
    assert set(chosen) == set(service_start.IDLE_FRIENDLY_DASK) - {monitor}
