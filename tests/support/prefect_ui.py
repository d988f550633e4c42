"""Drive the Prefect 3.8.8 web UI with Playwright (sync API) in headless Chromium.

No pytest dependency. Targets the *classic* (v1, Vue) UI, which Prefect serves
at the plain paths (/deployments, /runs/flow-run/<id>, /artifacts). Prefect 3.8.8
ALSO ships a React "v2" UI under /v2 and redirects the bare "/" there, but
explicit v1 paths are never redirected, so every helper below navigates by path.

Server gotcha: `prefect server start --port N` does NOT change the API URL the UI
talks to (/ui-settings still says :4200). Start the server with
PREFECT_UI_API_URL=http://127.0.0.1:N/api (verified; setting
PREFECT_SERVER_API_PORT=N should also work per the settings docs, untested).

Login (a server with PREFECT_SERVER_API_AUTH_STRING, as `xmdata serve` starts): the API answers
401 {"exception_message":"Unauthorized"} to everything but GET /api/health, and /ui-settings says
"auth": "BASIC". Any v1 page opened without a stored password lands on
/login?redirect=<path> (its refused calls leave "Authentication failed." and "Oops. Something went
wrong." toasts on the login page; /login opened directly shows the latter). The login page
(component Unauthenticated) is
  <h1 class="p-heading">Login</h1>
  <form> <div class="p-text-input"><input type="password" placeholder="admin:pass" autofocus></div>
         <button type="submit" class="p-button"> Login </button> </form>
with no <label> (get_by_label finds nothing; the input is the page's only textbox). Submit checks the
value with GET /api/admin/version sent with `Authorization: Basic btoa(value)`: 200 stores that in
localStorage "prefect-password" and routes to ?redirect= (else /dashboard); 401 stays on /login with
an "Authentication failed." toast. The whole `user:password` line is the value. Every later API call
carries the header (no 401 seen after login; the pages used here open no websocket). The bare "/"
307-redirects to the React app's own login, /v2/login?redirectTo=... (same placeholder, a submit
button "Login"); it shares the localStorage key, so a login in either app logs in both. Only v2 has a
"Logout" button. The React app also tries to reach sr-client-cfg.amplitude.com (telemetry; fails
offline, harmless).
"""
from __future__ import annotations

import re
import time

import httpx

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    # without these Chromium phones home and the closed network refuses it
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
UI_TIMEOUT_MS = 60_000  # the machine is slow/shared; first Vue render can take seconds
FAILED_STATES = {"FAILED", "CRASHED", "CANCELLED"}  # final, non-COMPLETED state types


def launch_chromium(playwright, headless: bool = True):
    """Debian's /usr/bin/chromium (Playwright's own browser download is impossible offline)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=headless, args=CHROMIUM_ARGS)


def _exact(text: str) -> re.Pattern:
    return re.compile(rf"^\s*{re.escape(text)}\s*$")


def log_in(page, ui_url: str, password: str, screenshot: str | None = None) -> None:
    """Open the UI, get sent to its login page, enter `password` (the `user:password` line), submit.

    Ends on the page the login sends to (/dashboard). `screenshot`: a path for a shot of the login page.
    """
    page.set_default_timeout(UI_TIMEOUT_MS)
    page.goto(ui_url.rstrip("/") + "/dashboard")
    page.wait_for_url("**/login**")  # not logged in: the app routes there itself
    field = page.locator("input[type=password]")  # placeholder "admin:pass", no label
    field.wait_for()
    if screenshot:  # the form fades in: finish that rather than shoot it half-drawn
        page.get_by_role("heading", name="Login").wait_for()
        page.screenshot(path=screenshot, animations="disabled")
    field.fill(password)
    # The app checks the value with GET /api/admin/version (with the header; the page's own
    # load-time call of it, without one, is not the answer to wait for).
    with page.expect_response(lambda r: r.url.endswith("/api/admin/version")
                              and r.request.headers.get("authorization")) as info:
        page.get_by_role("button", name="Login", exact=True).click()
    if info.value.status != 200:
        raise AssertionError(f"the UI's login was refused: {info.value.status} {info.value.text()}")
    page.wait_for_url(lambda url: "/login" not in url)


def open_deployment(page, ui_url: str, flow_name: str, deployment_name: str) -> str:
    """Deployments list -> click the deployment; returns the deployment id."""
    page.set_default_timeout(UI_TIMEOUT_MS)
    page.goto(ui_url.rstrip("/") + "/deployments")
    # The list shows one page of them (10): a project with more finds its own by the list's search box
    # (<input class="deployment-list__search-input" placeholder="Search deployments...">), as a user would.
    page.get_by_placeholder("Search deployments...").fill(deployment_name)
    # Each deployment is a <tr>; its name is <a class="deployment-list__name">NAME</a>
    # and the same row holds a link to the flow (<span class="flow-popover__link-name">).
    # Filtering the row by the flow name disambiguates equal deployment names.
    name_link = page.get_by_role("link", name=deployment_name, exact=True)
    row = page.locator("tr").filter(has=name_link).filter(has_text=flow_name)
    row.first.wait_for()
    row.first.get_by_role("link", name=deployment_name, exact=True).click()
    page.wait_for_url("**/deployments/deployment/**")
    # The "Run" button (class run-menu__run-button) only renders once the
    # deployment has loaded, so it doubles as the "page ready" signal.
    page.get_by_role("button", name="Run", exact=True).wait_for()
    return re.search(r"/deployments/deployment/([0-9a-f-]{36})", page.url).group(1)


def _param_control(page, name: str):
    # The schema form renders each parameter as
    #   <div class="p-label schema-form-property">
    #     <label for="<uuid>"><span class="schema-form-property__label">shards (Optional)</span>...
    #     <div class="p-label__description">...docstring Args: text...</div>
    #     <fieldset class="schema-form-property__fields"> <input type=number> | <textarea> </fieldset>
    # The <label for> points at an id that no control carries, so get_by_label()
    # finds nothing; match the label span text instead (" (Optional)" is appended
    # for parameters with defaults). str params are <textarea>, int/float <input type=number>.
    label = page.locator(".schema-form-property__label", has_text=re.compile(rf"^{re.escape(name)}( \(Optional\))?$"))
    prop = page.locator(".schema-form-property").filter(has=label).first
    prop.wait_for()
    control = prop.locator(".schema-form-property__fields").locator("input, textarea").first
    if control.count() == 0:
        # An Optional[int] defaulting to None renders a type toggle ("int" | "None", a button
        # group) and no control until a type is picked: pick the non-None one.
        prop.get_by_role("button", name=re.compile(r"^(int|integer|number|float|str|string)$")).first.click()
    return control


def start_custom_run(page, changes: dict[str, str], view_run: bool = True) -> str:
    """On a deployment page: Run -> Custom run, fill `changes`, Submit. Returns the flow run id.

    With view_run=True, ends on the flow run page (/runs/flow-run/<id>).
    """
    page.get_by_role("button", name="Run", exact=True).click()
    # The dropdown items are plain <button class="p-overflow-menu-item"> ("Quick run",
    # "Custom run"), no menu/menuitem roles. "Custom run" navigates to the full page
    # /deployments/deployment/<id>/run?parameters=<deployment defaults, url-encoded JSON>.
    page.get_by_role("button", name="Custom run", exact=True).click()
    submit = page.get_by_role("button", name="Submit", exact=True)
    submit.wait_for()
    for name, value in changes.items():
        control = _param_control(page, name)
        control.wait_for()
        control.fill(str(value))
        actual = control.input_value()
        if actual != str(value):
            raise AssertionError(f"parameter {name!r}: form shows {actual!r}, wanted {value!r}")
    # The id is taken from the API response rather than scraped from the page: on
    # success the UI just returns to the deployment page (?tab=Runs) with a toast.
    for _ in range(3):  # 503 is Prefect's "retry": SQLite was busy (a loaded machine)
        with page.expect_response(
            lambda r: r.request.method == "POST" and re.search(r"/api/deployments/[^/]+/create_flow_run$", r.url)
        ) as info:
            submit.click()
        resp = info.value
        if resp.status != 503:
            break
        page.wait_for_timeout(2000)
    if resp.status != 201:
        raise RuntimeError(f"create_flow_run returned {resp.status}: {resp.text()}")
    flow_run_id = resp.json()["id"]
    if view_run:
        # Toast: "<run-name> scheduled to start now" + <button>View run</button>. The design
        # system mounts TWO identical toast apps; the first copy is covered by the second
        # (Playwright: "... subtree intercepts pointer events"), so click the last one.
        # Toasts auto-dismiss, so fall back to direct navigation.
        try:
            page.get_by_role("button", name="View run", exact=True).last.click(timeout=10_000)
            page.wait_for_url(f"**/runs/flow-run/{flow_run_id}*", timeout=15_000)
        except Exception:
            page.goto(page.url.split("/deployments/")[0] + f"/runs/flow-run/{flow_run_id}")
    return flow_run_id


def wait_for_flow_run(api_url: str, flow_run_id: str, timeout: float = 180.0, poll: float = 1.0,
                      auth: str | None = None) -> dict:
    """Poll GET /api/flow_runs/{id} until final; returns the JSON, raises if not COMPLETED.

    `auth`: the server's `user:password` (basic auth), for a server that asks for one.
    """
    deadline = time.monotonic() + timeout
    basic = tuple(auth.split(":", 1)) if auth else None
    with httpx.Client(base_url=api_url.rstrip("/"), timeout=30, auth=basic) as client:
        while True:
            fr = client.get(f"/flow_runs/{flow_run_id}").raise_for_status().json()
            state = fr.get("state") or {}
            stype = state.get("type")
            if stype == "COMPLETED":
                return fr
            if stype in FAILED_STATES:
                raise RuntimeError(f"flow run {flow_run_id} ended {state.get('name')}: {state.get('message')}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"flow run {flow_run_id} still {state.get('name')} after {timeout}s")
            time.sleep(poll)


def wait_for_ui_state(page, state_name: str = "Completed", timeout_ms: int = 120_000) -> None:
    """Flow run page: wait for the header state badge (<span class="p-tag state-badge"><span>Completed</span>).

    The v1 run page polls the API itself, so no reload is needed.
    """
    badge = page.locator(".page-heading-flow-run__meta .state-badge")
    badge.filter(has_text=_exact(state_name)).first.wait_for(timeout=timeout_ms)


def find_artifact(page, ui_url: str, flow_run_id: str, key: str, open_card: bool = True) -> bool:
    """Flow run page -> Artifacts tab -> card whose title is `key` (optionally open it)."""
    page.goto(ui_url.rstrip("/") + f"/runs/flow-run/{flow_run_id}")
    # Tabs are <li class="p-tab" id="artifacts"> with no ARIA tab role, and
    # ?tab=Artifacts in the URL is reset to ?tab=Logs on load, so click it.
    page.locator("li.p-tab").filter(has_text=_exact("Artifacts")).click()
    # Each artifact is <a href="/artifacts/artifact/<id>"> around a card with
    # .artifact-card__subheader (type, e.g. "markdown"), .artifact-card__title (the key)
    # and the artifact description rendered as markdown.
    card = page.locator("a").filter(has=page.locator(".artifact-card__title", has_text=_exact(key))).first
    try:
        card.wait_for(timeout=30_000)
    except Exception:
        return False
    if open_card:
        card.click()
        page.wait_for_url("**/artifacts/artifact/**")
        # Detail page: breadcrumb "<key> / <artifact id>", the rendered markdown/table,
        # a "Show raw data" toggle button and a Key/Type/Flow Run side panel. The URL
        # changes before the old page is torn down (and the old cards also contain a
        # .markdown-renderer), so wait for the detail-only "Show raw data" button.
        page.get_by_role("button", name="Show raw data").wait_for()
    return True
