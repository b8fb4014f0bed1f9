"""The redaction corpus (issue 43): secrets in many shapes, each said in a sentence written for this
corpus (none comes from a benchmark). ``corpus(seed)`` builds the same items for the same seed; every
secret is random, so each write path can get secrets of its own and a hit names the path that leaked.

An item is one secret: ``shape`` (the class it belongs to), ``turns`` (what is said: one text, or two
turns of one speaker for the split shapes) and ``needles`` (the strings that must not be readable
afterwards: the secret as written, and for split secrets each part).
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass

from induction.secrets import luhn_ok

B62 = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
LOWER_HEX = "0123456789abcdef"
WORDS = ("amber anchor basil birch cobalt cedar delta ember falcon fjord garnet harbor indigo juniper kestrel "
         "lagoon maple nectar onyx orchid pepper quartz raven saffron tundra umber velvet walnut yonder zephyr "
         "acorn bramble canyon dune eagle fennel glacier hazel ivory jasper koala lotus meadow").split()


@dataclass(frozen=True)
class Item:
    shape: str
    turns: tuple[str, ...]
    needles: tuple[str, ...]

    @property
    def text(self) -> str:
        """The turns as one text (for the write paths that take one field)."""
        return " ".join(self.turns)


class _Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def s(self, alphabet: str, n: int) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def token(self, n: int) -> str:  # random, with every class present
        while True:
            t = self.s(B62, n)
            if any(c.isdigit() for c in t) and any(c.isupper() for c in t) and any(c.islower() for c in t):
                return t

    def password(self) -> str:
        w = self.r.choice(WORDS)
        return f"{w.capitalize()}{self.r.randint(100, 999)}{self.r.choice('!#%&*-')}{self.s(string.ascii_lowercase, 4)}"

    def digits(self, n: int) -> str:
        return str(self.r.randint(7, 9)) + self.s(string.digits, n - 1)

    def card(self, prefix: str = "4", n: int = 16) -> str:
        body = prefix + self.s(string.digits, n - len(prefix) - 1)
        for d in string.digits:
            if luhn_ok(body + d):
                return body + d
        raise AssertionError

    def iban(self, country: str, length: int) -> str:
        bban = self.s(string.digits, length - 4)
        num = int("".join(str(int(c, 36)) for c in bban + country + "00"))
        return f"{country}{98 - num % 97:02d}{bban}"

    def words(self, n: int) -> str:
        return " ".join(self.r.sample(WORDS, n)) + f" {self.r.randint(10, 99)}"


def _group(s: str, sep: str, n: int = 4) -> str:
    return sep.join(s[i:i + n] for i in range(0, len(s), n))


FULLWIDTH = {c: chr(ord(c) + 0xFEE0) for c in string.ascii_letters + string.digits + "-_"}


def _fullwidth(s: str) -> str:
    return "".join(FULLWIDTH.get(c, c) for c in s)


def _zero_width(s: str, g: _Gen) -> str:
    cut = sorted(g.r.sample(range(4, len(s) - 2), 2))
    return s[:cut[0]] + "\u200b" + s[cut[0]:cut[1]] + "\u200d" + s[cut[1]:]


def _pem(g: _Gen, label: str) -> tuple[str, tuple[str, ...]]:
    lines = [base64.b64encode(g.r.randbytes(48)).decode() for _ in range(4)]
    return (f"-----BEGIN {label}PRIVATE KEY-----\n" + "\n".join(lines) + f"\n-----END {label}PRIVATE KEY-----",
            (lines[0], lines[-1]))


def _jwt(g: _Gen) -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': g.digits(8), 'n': g.token(6)})}.{g.token(43)}"


One = Callable[[_Gen, int], tuple[tuple[str, ...], tuple[str, ...]]]


def _one(text: str, secret: str, *more: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return (text,), (secret, *more)


def _shapes() -> dict[str, One]:
    def pick(i: int, *opts: str) -> str:
        return opts[i % len(opts)]

    def pem(label: str) -> One:
        def f(g: _Gen, i: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
            key, parts = _pem(g, label)
            return (pick(i, "Here is the deploy key for the build box:\n", "keep this safe for me ", "my key file says ")
                    + key,), parts
        return f

    def split_password(g: _Gen, i: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        pw = g.password()
        return (pick(i, "ok so my bank password is", "the code for the garage door is", "Here's my email password:"),
                pick(i, pw, f"{pw} — don't tell anyone", f"{pw}")), (pw,)

    def split_key(g: _Gen, i: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        a, b = g.token(20), g.token(20)
        first = pick(i, f"my deploy token is ghp_{a}", f"the stripe key is sk_live_{a}", f"api key: {a}")
        return (first, f"{b}"), (a, b)

    return {
        "openai_key": lambda g, i: _one(f"{pick(i, 'My OpenAI key is', 'use', 'billing uses')} sk-proj-{(k := g.token(40))}"
                                        " for the side project.", f"sk-proj-{k}"),
        "anthropic_key": lambda g, i: _one(f"the claude key sk-ant-api03-{(k := g.token(48))} is on my laptop",
                                           f"sk-ant-api03-{k}"),
        "github_token": lambda g, i: _one(f"push with ghp_{(k := g.token(36))} when the CI is red", f"ghp_{k}"),
        "github_pat": lambda g, i: _one(f"the fine-grained one is github_pat_11{(k := g.token(20))}_{(m := g.token(59))}",
                                        f"{k}_{m}"),
        "aws_key_id": lambda g, i: _one(f"our AWS access key id is AKIA{(k := g.s(UPPER_DIGITS, 16))}.", f"AKIA{k}"),
        "aws_secret_key": lambda g, i: _one(pick(i, f"aws secret access key is {(k := g.s(B62 + '/+', 40))}",
                                                 f"AWS_SECRET_ACCESS_KEY={k}", f"for aws the secret key: {k}"), k),
        "slack_token": lambda g, i: _one(f"the bot posts with xoxb-{(k := g.digits(12) + '-' + g.digits(13) + '-' + g.token(24))}",
                                         f"xoxb-{k}"),
        "stripe_key": lambda g, i: _one(f"Stripe live key sk_live_{(k := g.token(24))} goes in the vault", f"sk_live_{k}"),
        "google_api_key": lambda g, i: _one(f"maps needs AIza{(k := g.token(35))} in the header", f"AIza{k}"),
        "twilio_key": lambda g, i: _one(f"twilio SK{(k := g.s(LOWER_HEX, 32))} sends the texts", f"SK{k}"),
        "sendgrid_key": lambda g, i: _one(f"mail goes out via SG.{(k := g.token(22) + '.' + g.token(43))}", f"SG.{k}"),
        "telegram_token": lambda g, i: _one(f"my telegram bot is {(k := g.digits(9) + ':AA' + g.token(33))}", k),
        "npm_token": lambda g, i: _one(f"publish with npm_{(k := g.token(36))} from my laptop", f"npm_{k}"),
        "gitlab_token": lambda g, i: _one(f"gitlab wants glpat-{(k := g.token(20))} for the mirror", f"glpat-{k}"),
        "jwt": lambda g, i: _one(f"the session cookie was {(k := _jwt(g))} yesterday", k.split(".")[2], k.split(".")[1]),
        "bearer_header": lambda g, i: _one(f"curl -H 'Authorization: Bearer {(k := g.token(32))}' the endpoint", k),
        "basic_auth_header": lambda g, i: _one(
            f"send Authorization: Basic {(k := base64.b64encode(f'maya:{g.password()}'.encode()).decode())} please", k),
        "pem_private_key": pem("RSA "),
        "openssh_private_key": pem("OPENSSH "),
        "connection_string": lambda g, i: _one(pick(i, f"postgres://app:{(p := g.password())}@db.internal:5432/prod",
                                                    f"the mongo uri is mongodb+srv://svc:{p}@cluster0.example.net/app",
                                                    f"cache at redis://:{p}@cache.local:6379/0"), p),
        "password_is": lambda g, i: _one(pick(i, f"My password is {(p := g.password())}",
                                              f"the password for the nas is {p}.", f"Password: {p}"), p),
        "pwd_equals": lambda g, i: _one(pick(i, f"login with user=maya pwd={(p := g.password())}", f"pwd: {p}",
                                             f"PWD = {p}"), p),
        "password_possessive": lambda g, i: _one(f"the router password's {(p := g.password())} now", p),
        "password_aside": lambda g, i: _one(f"the wifi password, by the way, is {(p := g.password())}", p),
        "password_before_cue": lambda g, i: _one(f"{(p := g.password())} is my email password, remember it", p),
        "passphrase": lambda g, i: _one(f"my passphrase is {(p := g.words(4))}.", p),
        "recovery_phrase": lambda g, i: _one(f"the wallet recovery phrase is {(p := g.words(12))}.", p),
        "pin": lambda g, i: _one(pick(i, f"the pin for my debit card is {(p := g.digits(6))}",
                                      f"alarm code: {p}", f"my PIN's {p}"), p),
        "env_password": lambda g, i: _one(f"in .env put DB_PASSWORD={(p := g.password())} and restart", p),
        "card_spaces": lambda g, i: _one(f"my card is {(c := _group(g.card(), ' '))} exp 09/29", c),
        "card_dots": lambda g, i: _one(f"card {(c := _group(g.card('5'), '.'))} for the hotel", c),
        "card_unicode_dashes": lambda g, i: _one(f"use {(c := _group(g.card(), pick(i, chr(0x2013), chr(0x2011), chr(0x2212))))}"
                                                 " for groceries", c),
        "card_fullwidth": lambda g, i: _one(f"my visa is {(c := _fullwidth(g.card()))}", c),
        "card_amex": lambda g, i: _one(f"amex {(c := (a := g.card('37', 15))[:4] + '-' + a[4:10] + '-' + a[10:])}", c),
        "iban_upper": lambda g, i: _one(f"rent goes to {(b := g.iban('DE', 22))} monthly", b),
        "iban_lower_spaced": lambda g, i: _one(f"my iban is {(b := _group(g.iban('GB', 22).lower(), ' '))} ok", b),
        "bank_account": lambda g, i: _one(pick(i, f"my account number is {(a := g.digits(10))}",
                                               f"routing number: {a}", f"acct {a} at the credit union"), a),
        "key_zero_width": lambda g, i: _one(f"api key {(k := _zero_width('sk-proj-' + g.token(32), g))} for tests",
                                            k, k.replace("\u200b", "").replace("\u200d", "")),
        "key_fullwidth": lambda g, i: _one(f"the token is {(k := _fullwidth('ghp_' + g.token(36)))}", k),
        "random_token": lambda g, i: _one(f"log in to the dashboard with {(k := g.token(40))} tonight", k),
        "split_password": split_password,
        "split_key": split_key,
    }


SHAPES = tuple(_shapes())


def corpus(seed: int = 43, per_shape: int = 3) -> list[Item]:
    g = _Gen(seed)
    out = []
    for shape, make in _shapes().items():
        for i in range(per_shape):
            turns, needles = make(g, i)
            out.append(Item(shape, tuple(turns), tuple(needles)))
    return out


def _norm(text: str) -> str:
    """What a reader sees: NFKC, without format characters (zero-width ones)."""
    import unicodedata

    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKC", text) if unicodedata.category(c) != "Cf")


def _escaped(text: str) -> str:
    return json.dumps(text)[1:-1]


def readable(needle: str, haystack: str, normalised_haystack: str | None = None) -> bool:
    """``needle`` can be read in ``haystack``: as written, or once both are normalised. An all-digit needle
    (a PIN, an account number) counts only on its own, not inside a longer number such as a timestamp."""
    norm = normalised_haystack if normalised_haystack is not None else _norm(haystack)
    if not needle.isascii() and _escaped(needle) in haystack:  # inside JSON written with ensure_ascii
        return True
    if _norm(needle).isdigit():
        rx = re.compile(rf"(?<![0-9]){re.escape(_norm(needle))}(?![0-9])")
        return bool(rx.search(norm) or (needle != _norm(needle) and needle in haystack))
    return needle in haystack or _norm(needle) in norm


def readable_bytes(needle: str, raw: bytes) -> bool:
    """The same over raw bytes (a store file): the needle's UTF-8 as written or normalised, or as JSON
    escapes it (a store keeps edit payloads as JSON text)."""
    forms = {needle.encode(), _norm(needle).encode(), _escaped(needle).encode()}
    if _norm(needle).isdigit():
        return any(re.search(rb"(?<![0-9])" + re.escape(f) + rb"(?![0-9])", raw) for f in forms)
    return any(f in raw for f in forms)


def leaks(items: list[Item], haystack: str) -> list[Item]:
    """The items with any needle readable in ``haystack``."""
    norm = _norm(haystack)
    return [it for it in items if any(readable(n, haystack, norm) for n in it.needles)]
