"""Where the secrets are in a text: normalisation, the detectors, and the spans they find.

Matching runs on a *normalised* copy of the text, and the spans found are mapped back to the original
(``find_secrets`` returns original offsets). Normalising is per character: format characters (Unicode
category Cf: zero-width space/joiners, BOM, soft hyphen, bidi marks) are dropped, every other character
becomes its NFKC form (fullwidth ``４１１１`` -> ``4111``, ``ｓｋ－`` -> ``sk-``, non-breaking and thin
spaces -> space), and dash and quote look-alikes (‐ ‑ ‒ – — ― − ’ ‘ “ ”) become ``-``, ``'`` and ``"``.
The redacted text is therefore the original text with each secret's original span replaced (a zero-width
character inside a key goes with the key; the text around it is kept exactly as written).

Two rule sets:

- The provider token shapes of ``detect-secrets`` (Yelp, Apache-2.0; pure Python, needs only pyyaml and
  requests, both already dependencies here): every ``RegexBasedDetector`` plugin's ``denylist`` (AWS key
  ids, Artifactory, Azure storage, Basic-auth URLs, Cloudant, Discord, GitHub, GitLab, IBM, JWT,
  Mailchimp, npm, OpenAI, private-key headers, PyPI, SendGrid, Slack, SoftLayer, Square, Stripe,
  Telegram, Twilio), so new token shapes arrive with the library. Its public-IP plugin is left out (not
  a secret); its keyword and entropy plugins are written for source code (the keyword one takes the
  rest of the line as the value), so the conversational rules below replace them.
- Conversational rules written here, each naming the class it covers (tests/test_redact.py holds one
  sentence per rule): cue + value ("the wifi password, by the way, is …", ``pwd=…``, "password's …",
  "… is my password", passphrases and recovery phrases up to the end of the sentence, env-style
  ``DB_PASSWORD=…``), API keys after a key/token/secret cue, provider prefixes the library lacks
  (``sk-ant-``, ``github_pat_``, ``AIza``, ``sk_test_``), AWS secret access keys after an AWS cue,
  Bearer and Basic authorization headers (Basic only when it decodes to ``user:password``), whole PEM /
  OpenSSH / PGP private keys, credentials in any ``scheme://user:password@host`` URL, payment cards
  (13-19 digits, any of space/dot/dash between them, Luhn-checked), IBANs in either case (mod-97
  checked), bank account / routing numbers after their cue, and long random-looking tokens (≥ 20
  characters mixing upper case, lower case and digits, the class changing often).
"""

from __future__ import annotations

import base64
import binascii
import importlib
import pkgutil
import re
import unicodedata
from collections.abc import Callable, Iterator
from functools import lru_cache

Span = tuple[int, int, str]  # start, end, kind

_CHAR_MAP = {**{c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"},
             **{c: "'" for c in "\u2018\u2019\u201a\u201b\u02bc\u2032"}, **{c: '"' for c in "\u201c\u201d\u201e\u2033"}}


def normalise(text: str) -> tuple[str, list[int] | None]:
    """The text matched against, and for each of its characters the index of the original character it
    came from (None: the text is plain ASCII and unchanged)."""
    if text.isascii():
        return text, None
    out: list[str] = []
    index: list[int] = []
    for i, c in enumerate(text):
        if c.isascii():
            out.append(c)
            index.append(i)
            continue
        if unicodedata.category(c) == "Cf":
            continue
        n = _CHAR_MAP.get(c) or unicodedata.normalize("NFKC", c)
        out.extend(n)
        index.extend([i] * len(n))
    return "".join(out), index


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum every payment card number satisfies.

    >>> luhn_ok("4111111111111111"), luhn_ok("4111111111111112")
    (True, False)
    """
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(text: str) -> bool:
    """ISO 13616 mod-97 check (either case, spaces allowed).

    >>> iban_ok("DE89 3704 0044 0532 0130 00"), iban_ok("de89 3704 0044 0532 0130 01")
    (True, False)
    """
    s = re.sub(r"\s", "", text).upper()
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{11,30}", s):
        return False
    moved = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


# -- the conversational rules -------------------------------------------------------------------------
_STOP = frozenset("""is was are be the a an my your his her our their its it this that these those same
different and or to for of in on at by with not never no none nothing something secret private hidden safe
changed change set saved stored written wrong right correct incorrect expired required needed easy hard weak
strong long short simple too also still just now new old here there what which where why how when reset
somewhere please below above attached sent same one mine yours ok okay sure yes yeah fine return none null true
false self data input str string int required optional undefined field column hash hashed value variable""".split())
_CODE = re.compile(r"[(){}\[\]<>]|^\$\{|^\$[A-Z_]+$|^%[sd(]|^[a-z_][a-z0-9_]*_[a-z0-9_]*$|password|passwd", re.IGNORECASE)
_PW_CUE = (r"(?:pass(?:word|wd|code|phrase)s?|pwd|pw|pin(?:\s+(?:code|number))?|passwort|contrase[ñn]a|"
           r"mot\s+de\s+passe|wi-?fi\s+key|(?:door|alarm|gate|garage|safe|locker)\s+code|"
           r"code\s+(?:for|to|of)\s+(?:the|my|our)\s+(?:[\w-]+\s+){0,2}?(?:door|gate|garage|alarm|safe|lock|locker)|lock\s+combination|"
           r"security\s+(?:code|answer)|cvv2?|cvc|one[\s-]time\s+(?:code|password)|otp|2fa\s+code|"
           r"(?:backup|recovery)\s+codes?|credentials|db_?pass|database_?pass|key_?pass)")
_KEY_CUE = (r"(?:api[\s_-]?keys?|apikey|secret(?:[\s_-]?(?:access[\s_-]?)?key)?|client[\s_-]?secret|"
            r"(?:access|auth|refresh|bot|bearer|session|personal\s+access|webhook|deploy|app)[\s_-]?tokens?|"
            r"tokens?|(?:license|licence|signing|encryption|private|auth|service|account|db|database|client|"
            r"priv|master|access)[\s_-]?key)")
_ABOUT = r"(?:\s+(?:for|to|of|on|at|in)\b[^.:=\n]{0,40}?)?"  # "password for the wifi at home is …"
_ASIDE = r"(?:\s*,[^,.:=\n]{1,40},)?"  # "the wifi password, by the way, is …"
_IS = (r"(?:\s*(?:'s\b|\bis\b|\bwas\b|\bare\b|\bremains\b|:|=|->|=>)(?:\s+(?:now|still|currently|actually|"
       r"just|simply|literally|set\s+to|changed\s+to))?|\s+(?:is\s+)?(?:set|changed|updated)\s+to|\s*[?:,]\s*it'?s"
       r"|\s*[?:,]\s*it\s+is)[ \t]*(?:[:-][ \t]+)?")
_VALUE = r"(\"[^\"\n]{1,100}\"|'[^'\n]{1,100}'|`[^`\n]{1,100}`|[^\s\"',;`]+?)(?=[.,;)\]]*(?:\s|$))"
_PHRASE = r"([^\s.;\n][^.;\n]{2,200}?)(?=\s*(?:[.;\n]|$))"  # a passphrase: to the end of the sentence


def _unquote(v: str) -> str:
    return v[1:-1] if len(v) > 1 and v[0] in "\"'`" and v[-1] == v[0] else v


def _pw_value(v: str) -> bool:
    v = _unquote(v)
    if v.lower() in _STOP or len(v) < 3 or _CODE.search(v):  # code: password = data.get(...), {{ password }}
        return False
    if any(not c.isalpha() for c in v):
        return len(v) >= 4 or v.isdigit()
    return len(v) >= 5 and not v.lower().endswith(("ed", "ing", "ly"))


def _key_value(v: str) -> bool:
    v = _unquote(v)
    return len(v) >= 8 and any(c.isdigit() for c in v) and v.lower() not in _STOP


def _strict_value(v: str) -> bool:  # a value said before its cue: must look made up
    return len(v) >= 6 and any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def _basic_ok(v: str) -> bool:
    try:
        raw = base64.b64decode(v + "=" * (-len(v) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in raw and all(32 <= b < 127 for b in raw)


def _random_token(v: str) -> bool:
    """A long token that looks random: upper, lower and digits, the class changing at least every 3.3 chars
    (random base62: about 0.6 of the steps; CamelCase words with a year: under 0.3)."""
    core = re.sub(r"[^A-Za-z0-9]", "", v)
    if len(core) < 20 or not any(c.isdigit() for c in core):
        return False
    if sum(c.isupper() for c in core) < 2 or sum(c.islower() for c in core) < 2:
        return False
    cls = ["u" if c.isupper() else "l" if c.islower() else "d" for c in core]
    changes = sum(a != b for a, b in zip(cls, cls[1:]))
    return changes / len(core) >= 0.3


Check = Callable[[str], bool] | None
# (kind, the class it covers, regex, group, check on the group, case-sensitive)
RULES: list[tuple[str, str, str, int, Check, bool]] = [
    ("private_key", "PEM / OpenSSH / PGP private key, header to footer (or to the end of the text)",
     r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
     0, None, True),
    ("private_key", "PuTTY private key file", r"PuTTY-User-Key-File-\d.*\Z", 0, None, True),
    ("api_key", "provider prefixes: OpenAI/Anthropic sk-, GitHub, AWS key ids, Slack, Google, Stripe test",
     r"(?<![\w-])(?:sk-(?:proj-|ant-(?:api\d\d-)?|live-|test-|svcacct-)?[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}"
     r"|github_pat_[A-Za-z0-9_]{20,}|(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}|xox[abeoprs]-[A-Za-z0-9\-]{10,}"
     r"|AIza[0-9A-Za-z_\-]{35}|[rs]k_(?:live|test)_[0-9A-Za-z]{16,}|glpat-[A-Za-z0-9_\-]{20,}|npm_[A-Za-z0-9]{30,}"
     r"|pypi-[A-Za-z0-9_\-]{50,}|hf_[A-Za-z0-9]{30,})", 0, None, True),
    ("api_key", "AWS secret access key (40 base64 characters) after an AWS cue",
     r"\baws[\w\s-]{0,30}?(?:secret|key)[\w\s-]{0,30}?(?:\bis\b|[:=])?\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
     1, None, False),
    ("password", "env-style credential variable: DB_PASSWORD=…, export GH_PASS=…",
     r"\b[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|PWD|PASS|PASSPHRASE|PIN)[A-Z0-9_]*\s*[:=]\s*" + _VALUE, 1, _pw_value, True),
    ("api_key", "env-style key variable: STRIPE_SECRET_KEY=…, API_TOKEN: …",
     r"\b[A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|CREDENTIALS?)[A-Z0-9_]*\s*[:=]\s*" + _VALUE, 1, _key_value, True),
    ("password", "passphrase / seed or recovery phrase: the rest of the sentence",
     r"\b(?:pass\s?phrase|seed\s+phrase|recovery\s+phrase|mnemonic(?:\s+phrase)?|secret\s+phrase)" + _ABOUT + _ASIDE
     + _IS + _PHRASE, 1, lambda v: len(v.split()) >= 2 or _pw_value(v), False),
    ("password", "password / pwd / pin / door code … (for X) (, aside,) is|'s|:|= value",
     r"\b" + _PW_CUE + _ABOUT + _ASIDE + _IS + _VALUE, 1, _pw_value, False),
    ("password", "pass= / pass: in a config line", r"\bpass\s*[:=]\s*" + _VALUE, 1, _pw_value, False),
    ("password", "value said before its cue: 'Xy7-secret is my password'",
     r"(?<![\w-])([^\s\"',;]{6,64}?)[.,;]?\s+(?:is|was|'s)\s+(?:my|our|the|his|her|their)\s+(?:[\w-]+\s+){0,2}?"
     r"(?:password|passcode|pin|pwd|passphrase)\b", 1, _strict_value, False),
    ("api_key", "api key / secret / token (for X) is|: value", r"\b" + _KEY_CUE + _ABOUT + _ASIDE + _IS + _VALUE, 1,
     _key_value, False),
    ("bearer", "Authorization: Bearer <token>", r"\bbearer\s+([A-Za-z0-9\-._~+/]{8,}=*)", 1, None, False),
    ("bearer", "JSON Web Token (three base64url parts)",
     r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", 0, None, True),
    ("basic_auth", "Authorization: Basic <base64 of user:password>", r"\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})", 1,
     _basic_ok, False),
    ("basic_auth", "credentials in a URL / connection string: scheme://user:password@host",
     r"\b[a-z][a-z0-9+.\-]*://[^\s:/@]*:([^\s]+?)@(?=[\w\[])", 1, None, False),
    ("bank_account", "account / routing number, sort code, BSB after its cue",
     r"\b(?:account\s*(?:number|no\.?|#)|acct\.?|routing\s*(?:number|no\.?)|sort\s*code|bsb|aba)"
     r"\s*(?:\bis\b|:|=|#)?\s*(\d[\d -]{4,}\d)", 1, None, False),
    ("api_key", "long random-looking token (upper, lower, digits, the class changing often)",
     r"(?<![A-Za-z0-9_/+=.\-])[A-Za-z0-9][A-Za-z0-9_/+=.\-]{18,}[A-Za-z0-9=](?![A-Za-z0-9_/+=\-])", 0, _random_token,
     True),
]
KINDS_OF_RULES = sorted({r[0] for r in RULES} | {"card", "iban"})


@lru_cache(maxsize=8)
def _compiled(kinds: frozenset[str]) -> list[tuple[str, re.Pattern[str], int, Check]]:
    return [(k, re.compile(rx, re.DOTALL if cs else re.IGNORECASE | re.DOTALL), g, chk)
            for k, _, rx, g, chk, cs in RULES if k in kinds]


# -- detect-secrets' maintained provider rules ----------------------------------------------------------
_LIBRARY_KIND = {"Basic Auth Credentials": "basic_auth", "Private Key": "private_key", "JSON Web Token": "bearer"}
_LIBRARY_SKIP = {"ip_public", "keyword", "high_entropy_strings"}


@lru_cache(maxsize=1)
def library_rules() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(kind, regex) for every regex plugin of detect-secrets (its verification, which calls providers
    over the network, is never used)."""
    import detect_secrets.plugins as plugins
    from detect_secrets.plugins.base import RegexBasedDetector

    out: list[tuple[str, re.Pattern[str]]] = []
    for info in pkgutil.iter_modules(plugins.__path__):
        if info.name in _LIBRARY_SKIP:
            continue
        mod = importlib.import_module(f"detect_secrets.plugins.{info.name}")
        for cls in vars(mod).values():
            if isinstance(cls, type) and issubclass(cls, RegexBasedDetector) and cls.__module__ == mod.__name__:
                rules = getattr(cls, "denylist", None)
                if isinstance(rules, (list, tuple)):  # abstract intermediates have none
                    kind = _LIBRARY_KIND.get(str(cls.secret_type), "api_key")
                    out += [(kind, rx) for rx in rules]
    return tuple(out)


def _library_spans(text: str, kinds: frozenset[str]) -> Iterator[Span]:
    for kind, rx in library_rules():
        if kind not in kinds:
            continue
        for m in rx.finditer(text):
            # a capturing group that starts after the match is the secret (basic auth, AWS secret, ...)
            s, e = (m.span(1) if rx.groups and m.start(1) > m.start() else m.span())
            while s < e and text[s] in " \t\n\"'=:":
                s += 1
            while e > s and text[e - 1] in " \t\n\"'":
                e -= 1
            if kind == "private_key" and e > s:  # the library matches the header only: take the whole key
                end = re.search(r"-----END [^\n]*?-----", text[e:])
                e = e + end.end() if end else len(text)
            if e > s:
                yield s, e, kind


# -- cards and IBANs: every length is tried, so a number followed by more digits or words is still found --
_CARD_RUN = re.compile(r"(?<![\d.\-])\d(?:[ .\-]?\d){12,}")
_IBAN_START = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?=[ ]?[A-Za-z0-9])")


def _card_spans(text: str) -> Iterator[Span]:
    """Card numbers in a run of digits and separators: starting and ending at group boundaries only."""
    for m in _CARD_RUN.finditer(text):
        run = m.group()
        digit_at = [i for i, c in enumerate(run) if c.isdigit()]
        starts = [k for k, i in enumerate(digit_at) if i == 0 or not run[i - 1].isdigit()]
        ends = {k for k, i in enumerate(digit_at) if i == len(run) - 1 or not run[i + 1].isdigit()}
        pos = 0
        for start in starts:
            if start < pos:
                continue
            for n in range(min(19, len(digit_at) - start), 12, -1):
                if start + n - 1 not in ends:
                    continue
                digits = "".join(run[i] for i in digit_at[start:start + n])
                seps = {c for c in run[digit_at[start]:digit_at[start + n - 1]] if not c.isdigit()}
                if len(seps) <= 1 and luhn_ok(digits):
                    yield m.start() + digit_at[start], m.start() + digit_at[start + n - 1] + 1, "card"
                    pos = start + n
                    break


def _iban_spans(text: str) -> Iterator[Span]:
    for m in _IBAN_START.finditer(text):
        tail = re.match(r"(?:[ ]?[A-Za-z0-9]){11,30}", text[m.end():])
        if not tail:
            continue
        body = text[m.start():m.end() + tail.end()]
        ends = [i + 1 for i, c in enumerate(body) if c != " "]
        for end in reversed(ends):
            if iban_ok(body[:end]):
                yield m.start(), m.start() + end, "iban"
                break


def find_secrets(text: str, kinds: frozenset[str], library: bool = True,
                 extra: tuple[tuple[str, re.Pattern[str], int], ...] = ()) -> list[Span]:
    """Non-overlapping (start, end, kind) spans of ``text`` (original offsets), earliest then longest first."""
    norm, index = normalise(text)
    spans: list[Span] = []
    for kind, rx, group, check in _compiled(kinds):
        for m in rx.finditer(norm):
            s, e = m.span(group)
            if s < 0 or e <= s or (check is not None and not check(m.group(group))):
                continue
            spans.append((s, e, kind))
    if library:
        spans += _library_spans(norm, kinds)
    if "card" in kinds:
        spans += _card_spans(norm)
    if "iban" in kinds:
        spans += _iban_spans(norm)
    for kind, rx, group in extra:
        for m in rx.finditer(norm):
            g = group if group <= (rx.groups or 0) else 0
            if m.end(g) > m.start(g) >= 0:
                spans.append((m.start(g), m.end(g), kind))
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    out: list[Span] = []
    for s, e, kind in spans:
        if out and s < out[-1][1]:  # overlaps a secret already taken: widen that one if this one reaches further
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e, out[-1][2])
            continue
        out.append((s, e, kind))
    if index is None:
        return out
    return [(index[s], index[e - 1] + 1, k) for s, e, k in out]
