"""Drives Herald's operator console in a real, headless Chromium against a real `herald serve` (SPEC §18).

Run by scripts/console-browser-test, which installs Chromium, its driver and Selenium first:

    python console_browser_test.py HERALD_BINARY SCREENSHOT_DIR

It starts `herald serve --sandbox` on a loopback port chosen by the kernel with a fresh SQLite file, seeds it
through the API (dead letters from the simulator's `invalid-` tokens, one of them `<script>alert(1)</script>`),
then checks, in the browser and in the database: a refused login (and its log line), the login, the overview's
figures, a requeue through the page, that tokens and reasons holding HTML are shown as text and run nothing, that a
cross-origin POST and the read-only token change nothing. On the Apps page (SPEC §22; serve runs with a
`--secrets-key-file`): the sandbox's apps listed, a Web Push app added through the form with a key from `herald
webpush-keys` (stored with the key sealed, listed by `GET /v1/admin/apps`), entries the server refuses (an unknown
provider, a missing field, a name holding HTML) storing nothing and showing the reason as text, the app removed
through the page, and the read-only token offered no change and refused one. It saves screenshots of the overview,
the dead-letter page and the Apps page for the README.
"""

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ready
from selenium.webdriver.support.ui import WebDriverWait

API_TOKEN = "console-test-admin-token"
READ_ONLY_TOKEN = "console-test-read-only-token"
WRONG_TOKEN = "not-the-token-zq7"
SCRIPT_TOKEN = "invalid-<script>alert(1)</script>"
IMAGE_TOKEN = 'invalid-<img src=x onerror="window.__xss=1">'
HTML_REASON = '<img src=x onerror="window.__xss=2">bad deploy'
HTML_PROVIDER = '<img src=x onerror="window.__xss=3">'
STORED_APP = "browser-web"


def fail(message):
    raise AssertionError(message)


class Herald:
    """A `herald serve --sandbox` on a fresh database, stopped with SIGTERM at the end."""

    def __init__(self, binary, directory):
        self.binary = binary
        self.database = os.path.join(directory, "herald.db")
        secrets_key = os.path.join(directory, "secrets.key")
        subprocess.run([binary, "secrets-key", "--out", secrets_key], check=True, capture_output=True)
        self.log_path = os.path.join(directory, "serve.log")
        self.log = open(self.log_path, "w+")
        self.process = subprocess.Popen(
            [binary, "serve", "--sandbox", "--db", self.database, "--listen", "127.0.0.1:0",
             "--api-token", API_TOKEN, "--console-read-only-token", READ_ONLY_TOKEN,
             "--secrets-key-file", secrets_key],
            stderr=self.log, stdout=subprocess.DEVNULL)
        deadline = time.time() + 30
        self.base = None
        while self.base is None:
            if time.time() > deadline or self.process.poll() is not None:
                self.log.seek(0)
                fail("herald serve did not start:\n" + self.log.read())
            time.sleep(0.05)
            self.log.seek(0)
            for line in self.log.read().splitlines():
                entry = json.loads(line) if line.startswith("{") else {}
                if entry.get("msg") == "listening":
                    self.base = "http://" + entry["address"]

    def log_text(self):
        # A file of its own: seeking `self.log` would move the offset that serve writes at.
        with open(self.log_path) as log:
            return log.read()

    def log_entries(self):
        return [json.loads(line) for line in self.log_text().splitlines() if line.startswith("{")]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)

    def request(self, method, path, body=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        for name, value in (headers or {"Authorization": "Bearer " + API_TOKEN}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                status, headers, text = response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            status, headers, text = error.code, dict(error.headers), error.read()
        return status, headers, json.loads(text) if text.startswith(b"{") else text

    def stored_apps(self):
        return self.query("SELECT * FROM apps ORDER BY name")

    def cli(self, *arguments):
        subprocess.run([self.binary, *arguments, "--db", self.database], check=True, capture_output=True)

    def query(self, sql, *arguments):
        with sqlite3.connect(self.database, timeout=10) as connection:
            return connection.execute(sql, arguments).fetchall()


def seed(herald):
    """Dead letters (the simulator's `invalid-` prefix), deliveries, a dropped token, then app `default` paused
    with a reason holding HTML, so what the page requeues stays queued where the database shows it."""
    tokens = ["invalid-a", "invalid-b", SCRIPT_TOKEN, IMAGE_TOKEN, "ok-1", "ok-2", "notreg-gone"]
    status, _, answer = herald.request("POST", "/v1/messages", {"registration_ids": tokens, "data": {"k": "v"}})
    if status != 202:
        fail("seeding failed: %s %s" % (status, answer))
    deadline = time.time() + 30
    while True:
        _, _, message = herald.request("GET", "/v1/messages/" + answer["id"])
        if message["counts"]["queued"] + message["counts"]["inflight"] == 0:
            break
        if time.time() > deadline:
            fail("the seeded message did not settle: %s" % message)
        time.sleep(0.1)
    status, _, _ = herald.request("POST", "/v1/admin/apps/default/pause", {"reason": HTML_REASON})
    if status != 200:
        fail("pause failed: %s" % status)
    # A second app, paused, with a backlog that stays: the overview must show every app the database has.
    herald.cli("pause", "second", "--reason", "kept for the test")
    herald.cli("send", '{"app": "second", "registration_ids": ["q1", "q2", "q3"]}')
    # A dead letter whose reason holds markup, as a misbehaving provider could answer.
    herald.query("UPDATE deliveries SET reason = ? WHERE token = 'invalid-b'", HTML_REASON)


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000",
                     "--disable-gpu", "--no-first-run", "--disable-extensions"]:
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)


def waiting(driver):
    """A 15 s wait that looks again when the page changed under it: after a submit or a click that navigates, an
    element found in the old document can fail with Chrome's "Node with given id does not belong to the document"
    (a WebDriverException that is not a stale-element one) before the new document is there."""
    return WebDriverWait(driver, 15, ignored_exceptions=(WebDriverException,))


def log_in(driver, herald, token):
    driver.get(herald.base + "/console")
    wait = waiting(driver)
    field = wait.until(ready.visibility_of_element_located((By.ID, "login-token")))
    field.send_keys(token)
    field.submit()
    wait.until(ready.visibility_of_element_located((By.ID, "nav")))


def expect_nothing_ran(driver, where):
    try:
        alert = driver.switch_to.alert
        fail("an alert opened on %s: %r" % (where, alert.text))
    except NoAlertPresentException:
        pass
    if driver.execute_script("return window.__xss === undefined") is not True:
        fail("markup from the database ran on " + where)
    if driver.find_elements(By.CSS_SELECTOR, "#view script, #view img, #status *"):
        fail("markup from the database became elements on " + where)


def cell_texts(driver, selector):
    return [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, selector)]


def fetch_in_page(driver, method, path, body=None):
    """The status of a request the page's own script makes, with the session's cookie, as the page's buttons do."""
    return driver.execute_async_script("""
        const [method, path, body, done] = arguments;
        fetch(path, {method, headers: {"Content-Type": "application/json"},
            body: body === null ? undefined : JSON.stringify(body)}).then((response) => done(response.status));
    """, method, path, body)


def save_app(driver, name, entry):
    """Types an app's name and its entry into the Apps page's form, as an operator does, and saves."""
    for field, text in [("app-name", name), ("app-entry", json.dumps(entry))]:
        element = driver.find_element(By.ID, field)
        element.clear()
        element.send_keys(text)
    driver.find_element(By.CSS_SELECTOR, "#app-form button[type=submit]").click()


def listed_apps(herald):
    status, _, answer = herald.request("GET", "/v1/admin/apps")
    if status != 200:
        fail("GET /v1/admin/apps answered %s %s" % (status, answer))
    return {app["name"]: app for app in answer["apps"]}


def main():
    binary, screenshots = sys.argv[1], sys.argv[2]
    directory = tempfile.mkdtemp(prefix="herald-console-browser-")
    herald = Herald(binary, directory)
    driver = None
    try:
        seed(herald)
        driver = browser()
        wait = waiting(driver)

        # A wrong token is refused, sets no cookie, and is logged with the browser's address but not the token;
        # the right one then logs in (one failure is far from the five that would slow this address down).
        driver.get(herald.base + "/console")
        field = wait.until(ready.visibility_of_element_located((By.ID, "login-token")))
        field.send_keys(WRONG_TOKEN)
        field.submit()
        wait.until(ready.visibility_of_element_located((By.ID, "login-failed")))
        if driver.get_cookie("herald_console"):
            fail("a wrong token got a session cookie")
        refusals = [entry for entry in herald.log_entries() if entry.get("msg") == "wrong token"]
        if len(refusals) != 1 or refusals[0].get("client") != "127.0.0.1":
            fail("the refused login is not logged once with the client's address: %s" % refusals)
        if WRONG_TOKEN in herald.log_text():
            fail("the refused token was logged")

        log_in(driver, herald, API_TOKEN)
        cookie = driver.get_cookie("herald_console")
        if not cookie or not cookie.get("httpOnly") or cookie.get("sameSite") != "Strict":
            fail("the session cookie is not HttpOnly and SameSite=Strict: %s" % cookie)
        if API_TOKEN in cookie["value"] or "herald_console" in driver.execute_script("return document.cookie"):
            fail("the cookie carries the token, or a script can read it")

        # The overview shows the apps and the counts the database holds.
        wait.until(ready.visibility_of_element_located((By.CSS_SELECTOR, "table.overview tr[data-app=second]")))
        apps = [name for (name,) in herald.query("SELECT name FROM apps ORDER BY name")]
        if cell_texts(driver, "table.overview td.app") != apps:
            fail("overview shows apps %r; the database has %r" % (cell_texts(driver, "table.overview td.app"), apps))
        for app in apps:
            row = driver.find_element(By.CSS_SELECTOR, "table.overview tr[data-app=%s]" % app)
            dead, queued = herald.query(
                "SELECT count(*) FILTER (WHERE state = 'dead'), count(*) FILTER (WHERE state = 'queued') "
                "FROM deliveries WHERE app = ?", app)[0]
            shown = (row.find_element(By.CSS_SELECTOR, "td.dead").text,
                     row.find_element(By.CSS_SELECTOR, "td.queued").text)
            if shown != (str(dead), str(queued)):
                fail("overview shows %s dead %s queued %s; the database has %s and %s"
                     % ((app,) + shown + (dead, queued)))
        row = driver.find_element(By.CSS_SELECTOR, "table.overview tr[data-app=default]")
        state = row.find_element(By.CSS_SELECTOR, "td.state").text
        if HTML_REASON not in state:
            fail("the pause reason is not shown as text: %r" % state)
        expect_nothing_ran(driver, "the overview")
        driver.save_screenshot(os.path.join(screenshots, "console-overview.png"))

        # Dead letters: tokens and reasons holding markup are text; nothing runs.
        driver.get(herald.base + "/console#dead")
        wait.until(ready.visibility_of_element_located((By.CSS_SELECTOR, "table.dead tbody tr")))
        tokens = cell_texts(driver, "table.dead td.token")
        if SCRIPT_TOKEN not in tokens or IMAGE_TOKEN not in tokens:
            fail("the tokens with markup are not shown as text: %r" % tokens)
        if HTML_REASON not in cell_texts(driver, "table.dead td.reason"):
            fail("the reason with markup is not shown as text")
        expect_nothing_ran(driver, "the dead letters")
        script_row = [row for row in driver.find_elements(By.CSS_SELECTOR, "table.dead tbody tr")
                      if row.find_element(By.CSS_SELECTOR, "td.token").text == SCRIPT_TOKEN][0]
        script_row.find_element(By.CSS_SELECTOR, "a.show").click()
        detail = wait.until(ready.visibility_of_element_located((By.CSS_SELECTOR, "#dead-detail dd.token")))
        if detail.text != SCRIPT_TOKEN:
            fail("the dead letter's detail does not show its token as text: %r" % detail.text)
        expect_nothing_ran(driver, "a dead letter's detail")
        driver.save_screenshot(os.path.join(screenshots, "console-dead.png"))

        # Requeue one dead letter through the page; its row changes in the database.
        (target_id,) = herald.query("SELECT id FROM deliveries WHERE token = 'invalid-a'")[0]
        driver.find_element(By.CSS_SELECTOR, "table.dead tr[data-id='%d'] input.pick" % target_id).click()
        driver.find_element(By.ID, "requeue-selected").click()
        wait.until(ready.text_to_be_present_in_element((By.ID, "status"), "requeued 1 of 1"))
        row_state = herald.query("SELECT state, attempts, reason FROM deliveries WHERE id = ?", target_id)[0]
        if row_state != ("queued", 0, None):
            fail("the requeued row is %r, not queued with 0 attempts" % (row_state,))

        # All that match a filter, a chunk at a time with progress: the two left with INVALID_ARGUMENT.
        reason = driver.find_element(By.CSS_SELECTOR, "#dead-filter input[name=reason]")
        reason.clear()
        reason.send_keys("INVALID_ARGUMENT")
        reason.submit()
        wait.until(lambda _: len(driver.find_elements(By.CSS_SELECTOR, "table.dead tbody tr")) == 2)
        driver.find_element(By.ID, "requeue-all").click()
        wait.until(ready.alert_is_present()).accept()
        wait.until(ready.text_to_be_present_in_element((By.ID, "status"), "requeued 2"))
        if herald.query("SELECT count(*) FROM deliveries WHERE state = 'queued' AND app = 'default'")[0][0] != 3:
            fail("requeue all that match did not requeue the two INVALID_ARGUMENT dead letters")

        # Look a message up and cancel it: app second's, whose three deliveries wait while the app is paused.
        (second_message,) = herald.query("SELECT id FROM messages WHERE app = 'second'")[0]
        driver.get(herald.base + "/console#messages/" + second_message)
        wait.until(lambda _: len(driver.find_elements(By.CSS_SELECTOR, "#message tbody tr")) == 3)
        if "null" in driver.find_element(By.ID, "message").text.split("\n"):
            fail("the message page shows a stray null")
        driver.find_element(By.ID, "cancel-message").click()
        wait.until(ready.alert_is_present()).accept()
        wait.until(ready.text_to_be_present_in_element((By.ID, "status"), "cancelled 3"))
        cancelled = herald.query("SELECT DISTINCT state, reason FROM deliveries WHERE message_id = ?", second_message)
        if cancelled != [("dropped", "Cancelled")]:
            fail("the cancelled message's deliveries are %r" % cancelled)

        # A cross-origin POST with the session cookie is refused and changes nothing.
        dead_before = herald.query("SELECT count(*) FROM deliveries WHERE state = 'dead'")[0][0]
        session = "herald_console=" + cookie["value"]
        for headers in [{"Cookie": session, "Origin": "http://evil.example"},
                        {"Cookie": session, "Sec-Fetch-Site": "cross-site"}]:
            status, _, body = herald.request("POST", "/v1/admin/dead/purge", {"filter": {}}, headers)
            if status != 403:
                fail("a cross-origin purge was not refused: %s %s" % (status, body))
        if herald.query("SELECT count(*) FROM deliveries WHERE state = 'dead'")[0][0] != dead_before:
            fail("a refused cross-origin request changed the dead letters")
        status, headers, _ = herald.request("GET", "/console", headers={})
        policy = headers.get("Content-Security-Policy", "")
        if status != 200 or "script-src 'self'" not in policy or "unsafe-inline" in policy:
            fail("the page's Content-Security-Policy is not strict: %r" % policy)

        # Apps (SPEC §22): the page lists the sandbox's apps; a Web Push app typed into its form is stored with its
        # VAPID key sealed; entries the server refuses store nothing and show its reason, markup included, as text;
        # the page removes what it stored.
        driver.get(herald.base + "/console#apps")
        wait.until(ready.visibility_of_element_located((By.ID, "app-form")))
        listed = listed_apps(herald)
        shown = cell_texts(driver, "table.apps td.app")
        if shown != list(listed) or not {"default", "ios", "web", "hms"} <= set(listed):
            fail("the Apps page shows %r; the API lists %r" % (shown, list(listed)))
        vapid = json.loads(subprocess.run([herald.binary, "webpush-keys", "--json"], check=True,
                                          capture_output=True).stdout)["private_key_pem"]
        entry = {"provider": "webpush", "vapid_private_key": vapid, "vapid_subject": "mailto:ops@example.com"}
        stored_before = herald.stored_apps()
        for name, refused, reason in [
                (STORED_APP, dict(entry, provider=HTML_PROVIDER), 'provider "%s" is not supported' % HTML_PROVIDER),
                (STORED_APP, {k: v for k, v in entry.items() if k != "vapid_subject"}, 'needs "vapid_subject"'),
                (HTML_PROVIDER, entry, 'got "%s"' % HTML_PROVIDER)]:
            before = driver.find_element(By.ID, "status").text
            save_app(driver, name, refused)
            bar = wait.until(lambda _: driver.find_element(By.ID, "status").text not in (before, "")
                             and driver.find_element(By.ID, "status"))
            if (bar.get_attribute("class") != "error" or not bar.text.startswith("InvalidParameters: ")
                    or reason not in bar.text):
                fail("the Apps page does not show the refusal %r as text: %r" % (reason, bar.text))
            expect_nothing_ran(driver, "the Apps page's refusal " + reason)
        if herald.stored_apps() != stored_before or list(listed_apps(herald)) != list(listed):
            fail("a refused app entry changed the apps")
        save_app(driver, STORED_APP, entry)
        wait.until(ready.text_to_be_present_in_element((By.ID, "status"), "stored %s (version 1)" % STORED_APP))
        row = wait.until(ready.visibility_of_element_located(
            (By.CSS_SELECTOR, "table.apps tr[data-app='%s']" % STORED_APP)))
        fingerprint = hashlib.sha256(vapid.encode()).hexdigest()
        if ("webpush database" not in row.text or "vapid_private_key: SHA-256 " + fingerprint[:16] not in row.text
                or "PRIVATE KEY" in driver.find_element(By.ID, "view").text):
            fail("the stored app's row is %r, not webpush from the database with its key's fingerprint" % row.text)
        driver.save_screenshot(os.path.join(screenshots, "console-apps.png"))
        (provider, definition, secrets), = herald.query(
            "SELECT provider, definition, secrets FROM apps WHERE name = ?", STORED_APP)
        sealed = json.loads(secrets)["vapid_private_key"]["sealed"]
        key_lines = [line for line in vapid.splitlines() if "-----" not in line]
        if (provider != "webpush" or "vapid_private_key" in json.loads(definition) or not sealed.startswith("hs1:")
                or any(line in str(herald.stored_apps()) for line in key_lines + ["PRIVATE KEY"])):
            fail("the stored app's row does not hold its key sealed only: %r %r %r" % (provider, definition, secrets))
        shown = listed_apps(herald).get(STORED_APP, {})
        if ((shown.get("source"), shown.get("provider")) != ("database", "webpush")
                or any(line in json.dumps(shown) for line in key_lines)):
            fail("GET /v1/admin/apps does not list the stored app as stored, without its key: %r" % shown)
        row.find_element(By.CSS_SELECTOR, "button.remove").click()
        wait.until(ready.alert_is_present()).accept()
        wait.until(ready.text_to_be_present_in_element((By.ID, "status"), "removed " + STORED_APP))
        if driver.find_elements(By.CSS_SELECTOR, "table.apps tr[data-app='%s']" % STORED_APP):
            fail("the removed app is still on the Apps page")
        if (herald.query("SELECT provider, definition, secrets FROM apps WHERE name = ?", STORED_APP) != [(None,) * 3]
                or STORED_APP in listed_apps(herald)):
            fail("the app removed through the page is still stored")
        # Stored again behind the page's back, for the read-only token to find and not change.
        status, _, answer = herald.request("PUT", "/v1/admin/apps/" + STORED_APP, entry)
        if status != 201:
            fail("storing the app again failed: %s %s" % (status, answer))

        # Log out; the read-only token can look but not act.
        driver.find_element(By.CSS_SELECTOR, "#logout button").click()
        wait.until(ready.visibility_of_element_located((By.ID, "login-token")))
        log_in(driver, herald, READ_ONLY_TOKEN)
        driver.get(herald.base + "/console#dead")
        wait.until(ready.text_to_be_present_in_element((By.ID, "dead-actions"), "Read-only"))
        if driver.find_elements(By.ID, "requeue-selected") or driver.find_elements(By.CSS_SELECTOR, "input.pick"):
            fail("the read-only page offers to act")
        answer = fetch_in_page(driver, "POST", "/v1/admin/dead/requeue", {"filter": {}})
        if answer != 403:
            fail("the read-only session could requeue: %s" % answer)
        if herald.query("SELECT count(*) FROM deliveries WHERE state = 'dead'")[0][0] != dead_before:
            fail("the read-only token changed the dead letters")
        status, _, _ = herald.request("POST", "/v1/admin/apps/default/resume", {},
                                      {"Authorization": "Bearer " + READ_ONLY_TOKEN})
        if status != 403 or herald.query("SELECT paused FROM apps WHERE name = 'default'")[0][0] != 1:
            fail("the read-only token resumed an app")
        # The read-only token sees the Apps page but is offered no change, and one tried anyway is refused.
        driver.get(herald.base + "/console#apps")
        wait.until(ready.visibility_of_element_located(
            (By.CSS_SELECTOR, "table.apps tr[data-app='%s']" % STORED_APP)))
        if driver.find_elements(By.CSS_SELECTOR, "#app-form, table.apps button"):
            fail("the read-only Apps page offers to change an app")
        stored_before = herald.stored_apps()
        for method, body in [("PUT", entry), ("DELETE", None)]:
            answer = fetch_in_page(driver, method, "/v1/admin/apps/" + STORED_APP, body)
            if answer != 403:
                fail("the read-only session's %s of an app answered %s" % (method, answer))
        if herald.stored_apps() != stored_before:
            fail("the read-only token changed the apps")
        print("console browser test: ok (%s)" % herald.base)
    finally:
        if driver is not None:
            driver.quit()
        herald.stop()


if __name__ == "__main__":
    main()
