"""A real browser for page tests: Playwright driving the system's Chromium
against the real web server, through the ``page`` fixture (tests/conftest.py),
which fails a test on a JavaScript error, a console error (a refused
Content-Security-Policy, a 404) or a failed request."""

import shutil

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(not shutil.which("chromium"), reason="needs Chromium (scripts/test.sh installs it)")


def sign_up(page, username):
    page.goto("/signup/")
    page.fill("#id_username", username)
    page.fill("#id_password1", "a long enough passphrase")
    page.fill("#id_password2", "a long enough passphrase")
    page.click("text=Create account")
    page.wait_for_url("**/")


# Every text a status badge or a list's status cell is given, in order, with
# its row's text: a status the page shows for a moment (two events in one
# burst) is recorded, where polling the page for it may look too late. A text
# is taken from the node added, under the element it was added to: by the
# time the observer runs, a later text may have replaced it in the page.
_RECORD_STATUSES = """
window.statusesSeen = [];
{
const STATUS_CELLS = "#status, td.status";
function recordStatus(cell, text) {
  window.statusesSeen.push([cell.closest("tr")?.innerText ?? "", text.trim()]);
}
new MutationObserver((records) => {
  for (const record of records) {
    for (const node of record.addedNodes) {
      if (node.nodeType === Node.TEXT_NODE) {
        if (record.target.matches?.(STATUS_CELLS)) recordStatus(record.target, node.data);
      } else if (node.matches) {
        const cells = node.matches(STATUS_CELLS) ? [node] : [...node.querySelectorAll(STATUS_CELLS)];
        for (const cell of cells) recordStatus(cell, cell.textContent);
      }
    }
  }
}).observe(document, { subtree: true, childList: true });
}
"""


def record_statuses(page) -> None:
    """From the next page loaded on, record every status the page shows."""
    page.add_init_script(_RECORD_STATUSES)


def statuses_seen(page, row: str = "") -> list[str]:
    """The statuses shown since the page loaded, each change once: the job
    page's badge, or the list row whose text holds ``row``."""
    shown = [text for where, text in page.evaluate("window.statusesSeen") if row in where]
    return [text for n, text in enumerate(shown) if n == 0 or shown[n - 1] != text]


def held_until_enabled(page, script: str, click: str, button: str) -> None:
    """Click ``click`` (to a page whose form only its ``script`` handles)
    with that script's download held back, and see ``button`` disabled until
    the script has run: a click before it would submit the form to the page
    itself."""
    from playwright.sync_api import expect

    held = []

    def hold(route) -> None:
        held.append(route)

    page.route(f"**/{script}", hold)
    page.click(click)
    expect(page.locator(button)).to_be_disabled()
    page.wait_for_timeout(100)
    expect(page.locator(button)).to_be_disabled()
    assert held, f"{script} was not asked for"
    held[0].continue_()
    page.unroute(f"**/{script}")
    expect(page.locator(button)).to_be_enabled()
