"""The dashboard in a real browser: the system Chromium driven by Playwright, against the real stack.

Django serves from pytest-django's ``live_server`` (a transactional test database: the server thread, the
test and the worker see each other's committed rows), a real Celery worker process runs the jobs through
the real Redis broker (``tests.conftest.start_worker``, one for the whole session), and the browser is the
system's Chromium (``/usr/bin/chromium``, or ``$CHROMIUM``), headless; Playwright's own browser downloads
are never used.

Every page a journey looks at (``Ui.check``) is held to the dashboard's bars: no serious or critical
axe-core violation, no console error, no uncaught script error and no Content-Security-Policy violation
(reported by the page's ``securitypolicyviolation`` event and by Chromium's console); each gets a full-page
screenshot named after it in ``$BROWSER_SCREENSHOTS`` (default ``var/screenshots/``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, WorkerProcess, start_worker

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(os.environ.get("BROWSER_SCREENSHOTS") or ROOT / "var" / "screenshots")
BLOCKING_IMPACTS = ("serious", "critical")
TIMEOUT_MS = 15_000

# Reported to the test through an exposed binding (it survives navigations), and to the console.
CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", (event) => {
  const text = `${event.violatedDirective} blocked ${event.blockedURI || "inline"} at ${event.sourceFile || ""}:${event.lineNumber}`;
  if (window.__planner_csp_violation) { window.__planner_csp_violation(text); }
});
"""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/browser is a ``browser`` test (left out of the default run)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: install the system package (apt-get install chromium) or set CHROMIUM"
        )
    from playwright.sync_api import expect, sync_playwright

    # Playwright's sync API runs an event loop in this thread; Django refuses database access from a thread
    # with a running loop unless told that this is intended (the tests' own ORM calls are synchronous). Set
    # only while the browser runs, so that the default suite (which collects this file) keeps the check.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    expect.set_options(timeout=TIMEOUT_MS)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="session")
def worker(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    """One real Celery worker on the test database for the whole session (starting one takes seconds)."""
    process = start_worker(tmp_path_factory.mktemp("browser-worker"), concurrency=2)
    yield process
    process.stop()


@dataclass
class Ui:
    """A browser tab on the live server that records every error and checks each page it is shown."""

    page: Any
    base_url: str
    problems: list[str] = field(default_factory=list)
    allowed: list[re.Pattern[str]] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return self.base_url + path

    def goto(self, path: str) -> Any:
        return self.page.goto(self.url(path))

    def allow(self, pattern: str) -> None:
        """A console error the journey causes on purpose (a 400 page for bad input, a 404)."""
        self.allowed.append(re.compile(pattern))

    def record(self, problem: str) -> None:
        if not any(pattern.search(problem) for pattern in self.allowed):
            self.problems.append(problem)

    def check(self, name: str, *, third_party_rules: tuple[str, ...] = ()) -> None:
        """Hold the current page to the bars: axe (no serious/critical violation), no console or CSP error
        so far (failures are reported together at the end of the journey); save ``<name>.png``. ``third_party_rules`` are axe rules not run on a page whose markup
        is a third party's (Swagger UI); every such exception is named where the page is checked."""
        from axe_playwright_python.sync_playwright import Axe

        self.page.wait_for_load_state("load")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
        options: dict[str, Any] = {"resultTypes": ["violations"]}
        if third_party_rules:
            options["rules"] = {rule: {"enabled": False} for rule in third_party_rules}
        results = Axe().run(self.page, options=options)
        blocking = [v for v in results.response["violations"] if v.get("impact") in BLOCKING_IMPACTS]
        details = "\n".join(
            f"  [{v['impact']}] {v['id']}: {v['help']} ({v['helpUrl']})\n"
            + "\n".join(
                f"      at {node['target']}: {node.get('failureSummary', '')}" for node in v["nodes"][:5]
            )
            for v in blocking
        )
        if blocking:
            self.failures.append(f"axe on page '{name}' ({self.page.url}):\n{details}")
        self.take_problems(name)
        self.checked.append(name)

    def take_problems(self, where: str) -> None:
        problems, self.problems = self.problems, []
        if problems:
            self.failures.append(f"browser errors by page '{where}':\n" + "\n".join(problems))

    def assert_clean(self) -> None:
        """Every failure of the journey's pages at once (a journey goes on past a page that fails a bar,
        so that one run names every page's problems)."""
        self.take_problems("end of journey")
        assert not self.failures, "\n".join(self.failures)


@pytest.fixture
def ui(chromium: Any, live_server: Any, worker: WorkerProcess) -> Iterator[Ui]:
    context = chromium.new_context(
        accept_downloads=True, locale="en-US", viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    tab = Ui(page=page, base_url=live_server.url)

    def on_console(message: Any) -> None:
        source = (message.location or {}).get("url", "")
        # The browser's own favicon probe is not a request of the page.
        if message.type == "error" and not source.endswith("/favicon.ico"):
            tab.record(f"console error on {page.url} ({source}): {message.text}")

    page.on("console", on_console)
    page.on("pageerror", lambda error: tab.record(f"uncaught script error on {page.url}: {error}"))
    page.expose_function(
        "__planner_csp_violation", lambda text: tab.record(f"CSP violation on {page.url}: {text}")
    )
    page.add_init_script(CSP_LISTENER)
    # Confirmation dialogs (revoke, archive) are answered yes, as the person clicking would.
    page.on("dialog", lambda dialog: dialog.accept())
    try:
        yield tab
        tab.assert_clean()
    finally:
        context.close()


def log_in(ui: Ui, username: str, password: str | None = None) -> None:
    """Log in through the form, as a person does (the personas' passwords are ``<name>-password-1234``)."""
    page = ui.page
    ui.goto("/login/")
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill(password or f"{username}-password-1234")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"^(?!.*/login/).*$"))


def solved_plans(*, team: Any, user: Any, names: list[str], worker: WorkerProcess) -> list[Any]:
    """Plans of ``team`` (one tensor-parallel degree each, so their figures differ) solved by the real
    worker: each run is requested as the API does and the worker stores its result."""
    from scenarios import services
    from scenarios.models import Plan
    from tests.api import factories
    from tests.conftest import wait_for

    trio = factories.scenario_trio(team=team, user=user, suffix="-shared")
    plans = []
    for index, name in enumerate(names):
        training = {
            **factories.TRAINING,
            "layout": {**factories.TRAINING["layout"], "tp": 2 ** (index % 3 + 1)},
        }
        plan = services.plan_create(
            team=team,
            user=user,
            name=name,
            cluster=trio[0],
            model=trio[1],
            site=trio[2],
            training=training,
            economics=factories.ECONOMICS,
        )
        services.run_request(plan=plan, user=user)
        plans.append(plan)
    ids = [plan.pk for plan in plans]

    def all_solved() -> bool:
        return Plan.objects.filter(pk__in=ids, latest_result__isnull=False).count() == len(ids)

    assert wait_for(all_solved, timeout_s=90), worker.log()[-3000:]
    return list(Plan.objects.filter(pk__in=ids).order_by("pk"))
