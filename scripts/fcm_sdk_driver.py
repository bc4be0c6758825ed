"""Drives Herald's drop-in FCM HTTP v1 endpoint with the real SDKs, changed only as the README says.

Usage: fcm_sdk_driver.py HERALD_URL API_TOKEN PROJECT
(HERALD_URL like http://127.0.0.1:8600). Run by Tests/IntegrationTests/SDKIntegrationTests.swift in the venv that
scripts/python-sdks makes. Checks every answer the SDKs give (exit 1 with the reason on the first surprise) and
prints one JSON object on stdout: the message names Herald gave, for the Swift test to follow to FCM.
"""

import asyncio
import json
import sys
import warnings

import firebase_admin
import google.auth.credentials
from firebase_admin import credentials, exceptions, messaging
from pyfcm import FCMNotification
from pyfcm.errors import InvalidDataError

HERALD, API_TOKEN, PROJECT = sys.argv[1:4]


def fail(reason):
    print(f"sdk driver: {reason}", file=sys.stderr)
    sys.exit(1)


def expect(condition, reason):
    if not condition:
        fail(reason)


# MARK: - firebase-admin 7.7: the README's one-line change plus a credential that carries Herald's API token


class HeraldToken(google.auth.credentials.Credentials):
    """Herald's API token as a google-auth credential: nothing to refresh (the SDKs call refresh() before a first
    request and after a 401; pyfcm before each session), and no request to Google."""

    def __init__(self, token):
        super().__init__()
        self.token = token

    def refresh(self, request):
        pass


class HeraldCredential(credentials.Base):
    """firebase-admin sends `Authorization: Bearer <token of this credential>`: Herald's API token."""

    def __init__(self, token):
        self._token = token

    def get_credential(self):
        return HeraldToken(self._token)


messaging._MessagingService.FCM_URL = HERALD + "/v1/projects/{0}/messages:send"
app = firebase_admin.initialize_app(HeraldCredential(API_TOKEN), {"projectId": PROJECT})
prefix = f"projects/{PROJECT}/messages/"
names = {}

full = messaging.Message(
    token="sdk-token-1",
    data={"score": "4x8", "time": "15:10"},
    notification=messaging.Notification(title="Portugal vs. Denmark", body="great match!"),
    android=messaging.AndroidConfig(
        ttl=3600, priority="high", collapse_key="score",
        notification=messaging.AndroidNotification(icon="ic_ball", color="#00ff00", channel_id="scores"),
    ),
    apns=messaging.APNSConfig(
        headers={"apns-priority": "10"},
        payload=messaging.APNSPayload(aps=messaging.Aps(badge=3, sound="default", category="MATCH")),
    ),
    webpush=messaging.WebpushConfig(
        headers={"TTL": "300", "Urgency": "high"},
        data={"web": "1"},
        notification=messaging.WebpushNotification(title="Web title", body="web body"),
    ),
    fcm_options=messaging.FCMOptions(analytics_label="sdk-test"),
)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # 7.7 deprecates token for fid; both must work
    names["full"] = messaging.send(full, app=app)
expect(names["full"].startswith(prefix), f"send answered {names['full']!r}")

names["fid"] = messaging.send(messaging.Message(fid="sdk-fid-1", data={"kind": "fid"}), app=app)
expect(names["fid"].startswith(prefix), f"send to an fid answered {names['fid']!r}")

names["dry_run"] = messaging.send(messaging.Message(topic="news", data={"a": "b"}), dry_run=True, app=app)
expect(names["dry_run"].startswith(prefix), f"dry run answered {names['dry_run']!r}")

batch = [messaging.Message(fid=f"sdk-batch-{i}", data={"i": str(i)}) for i in range(100)]
response = asyncio.run(messaging.send_each_async(batch, app=app))
failures = [r.exception for r in response.responses if not r.success]
expect(response.success_count == 100, f"send_each_async: {response.success_count} of 100, first error {failures[:1]}")
names["batch"] = [r.message_id for r in response.responses]

# What FCM v1 refuses, the SDK must raise as FCM's typed error: here a reserved data key.
try:
    messaging.send(messaging.Message(fid="sdk-invalid", data={"from": "x"}), app=app)
    fail("a reserved data key was accepted")
except messaging.exceptions.InvalidArgumentError as error:
    expect("from" in str(error), f"InvalidArgumentError does not name the key: {error}")

wrong = firebase_admin.initialize_app(HeraldCredential("wrong-token"), {"projectId": PROJECT}, name="wrong")
try:
    messaging.send(messaging.Message(fid="sdk-unauth", data={"a": "b"}), app=wrong)
    fail("a wrong API token was accepted")
except exceptions.UnauthenticatedError:
    pass

elsewhere = firebase_admin.initialize_app(HeraldCredential(API_TOKEN), {"projectId": "no-such-project"}, name="other")
try:
    messaging.send(messaging.Message(fid="sdk-nowhere", data={"a": "b"}), app=elsewhere)
    fail("an unknown project was accepted")
except exceptions.NotFoundError:
    pass


# MARK: - pyfcm 2.1: its endpoint base, and the same credentials


class HeraldFCM(FCMNotification):
    FCM_END_POINT_BASE = HERALD + "/v1/projects"


fcm = HeraldFCM(credentials=HeraldToken(API_TOKEN), project_id=PROJECT)
result = fcm.notify(fcm_token="pyfcm-token-1", notification_title="pyfcm", notification_body="hello",
                    data_payload={"via": "pyfcm"})
expect(result.get("name", "").startswith(prefix), f"pyfcm notify answered {result!r}")
names["pyfcm"] = result["name"]
try:
    fcm.notify(fcm_token="pyfcm-invalid", data_payload={"gcm.x": "reserved"})
    fail("pyfcm: a reserved data key was accepted")
except InvalidDataError:
    pass

print(json.dumps(names))
