"""Checks Herald's Web Push cryptography with independent implementations: http_ece (Mozilla's reference for the
aes128gcm content coding, RFC 8188/8291) and py_vapid (RFC 8292), both over the `cryptography` package.

Usage: webpush_interop.py INPUT.json
Run by Tests/IntegrationTests/WebPushInteropTests.swift in the venv that scripts/python-sdks makes. INPUT holds a
browser-side subscription made by Herald (its private key as PEM, its public key and auth secret), messages Herald
encrypted to it, a VAPID Authorization header Herald made, and plaintexts to encrypt back. Every check that fails
exits 1 with the reason; on success one JSON object goes to stdout: what was decrypted and verified, and the
bodies http_ece encrypted, for the Swift test to decrypt with Herald.
"""

import base64
import json
import sys

import http_ece
import py_vapid
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils
from py_vapid import jwt as vapid_jwt


def fail(reason):
    print(f"webpush interop: {reason}", file=sys.stderr)
    sys.exit(1)


def expect(condition, reason):
    if not condition:
        fail(reason)


def b64decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64encode(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


with open(sys.argv[1], encoding="utf-8") as file:
    given = json.load(file)

# -- RFC 8291: Herald's bodies, decrypted by http_ece with the subscriber's key -------------------------------------
subscriber = given["subscriber"]
private_key = serialization.load_pem_private_key(subscriber["private_key_pem"].encode(), password=None)
expect(isinstance(private_key.curve, ec.SECP256R1), "the subscriber key is not P-256")
public_point = private_key.public_key().public_bytes(
    serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
expect(b64encode(public_point) == subscriber["p256dh"], "p256dh is not the private key's public point")
auth = b64decode(subscriber["auth"])
expect(len(auth) == 16, "auth is not 16 bytes")

decrypted = 0
for index, message in enumerate(given["messages"]):
    body = b64decode(message["body"])
    expect(body[16:20] == (4096).to_bytes(4, "big"), f"message {index}: rs is not 4096")
    expect(body[20] == 65 and body[21] == 4, f"message {index}: the key id is not a 65-byte uncompressed point")
    try:
        plaintext = http_ece.decrypt(body, private_key=private_key, auth_secret=auth, version="aes128gcm")
    except Exception as error:  # http_ece raises ECEException and cryptography's InvalidTag
        fail(f"message {index}: http_ece cannot decrypt it: {error!r}")
    expect(plaintext == b64decode(message["plaintext"]), f"message {index}: http_ece decrypted other bytes")
    tampered = bytearray(body)
    tampered[-1] ^= 1
    try:
        http_ece.decrypt(bytes(tampered), private_key=private_key, auth_secret=auth, version="aes128gcm")
        fail(f"message {index}: a tampered copy decrypted")
    except Exception:  # cryptography's InvalidTag
        pass
    decrypted += 1

# -- RFC 8292: Herald's VAPID header, verified by py_vapid and by cryptography directly ------------------------------
vapid = given["vapid"]
header = vapid["authorization"]
scheme, _, parameters = header.partition(" ")
expect(scheme == "vapid", f"the scheme is {scheme!r}, not vapid")
fields = {}
for parameter in parameters.split(","):
    name, equals, value = parameter.strip().partition("=")
    expect(equals == "=", f"a malformed auth-param {parameter!r}")
    fields[name] = value
expect(set(fields) == {"t", "k"}, f"the parameters are {sorted(fields)}, not t and k")
token, key = fields["t"], fields["k"]
expect(key == vapid["public_key"], "k is not the VAPID public key")

claims = vapid_jwt.decode(token, key)  # py_vapid: ES256 signature checked with k, claims returned
# py_vapid's own header parser wants "t=…,k=…" without RFC 7235's optional space after the comma.
expect(py_vapid.Vapid02.verify(f"vapid t={token},k={key}"), "py_vapid.Vapid02.verify refused the header")
expect(py_vapid.Vapid01.verify(key, f"vapid {token}"), "py_vapid.Vapid01.verify refused the token")

signing_input, _, signature = token.rpartition(".")
raw = b64decode(signature)
expect(len(raw) == 64, "the signature is not r || s (64 bytes)")
public_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64decode(key))
der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
try:
    public_key.verify(der, signing_input.encode(), ec.ECDSA(hashes.SHA256()))
except InvalidSignature:
    fail("cryptography refused the ES256 signature")
forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
try:
    vapid_jwt.decode(forged, key)
    fail("a forged signature verified")
except InvalidSignature:
    pass

jose = json.loads(b64decode(signing_input.split(".")[0]))
expect(jose == {"typ": "JWT", "alg": "ES256"}, f"the JOSE header is {jose}")
expect(claims["aud"] == vapid["audience"], f"aud is {claims['aud']!r}")
expect(claims["sub"] == vapid["subject"], f"sub is {claims['sub']!r}")
expect(py_vapid._check_sub(claims["sub"]), "py_vapid finds sub malformed")
expect(isinstance(claims["exp"], int), "exp is not an integer")
expect(vapid["now"] < claims["exp"] <= vapid["now"] + 24 * 3600, f"exp {claims['exp']} is not within 24 hours")

# -- And back: http_ece encrypts, Herald decrypts --------------------------------------------------------------------
bodies = []
for plaintext in given["encrypt"]:
    sender = ec.generate_private_key(ec.SECP256R1())
    body = http_ece.encrypt(b64decode(plaintext), private_key=sender, dh=public_point, auth_secret=auth,
                            version="aes128gcm")
    bodies.append(b64encode(body))

print(json.dumps({"decrypted": decrypted, "claims": claims, "bodies": bodies}))
