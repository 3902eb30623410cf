"""The sensitive-data gate on a labelled corpus: secrets caught, look-alikes passed."""

from __future__ import annotations

from pathlib import Path

import pytest
from storekit import open_store, recorded_session

from daemon.sensitive.gate import (
    Gate,
    Secret,
    find_sensitive,
    iban_valid,
    luhn_valid,
    mask_lines,
    redact,
)
from daemon.store import sql

# Each secret sentence holds exactly one secret: the value in the second element.
SECRETS: list[tuple[str, str]] = [
    ("Use the key AKIAIOSFODNN7EXAMPLE for the staging bucket.", "AKIAIOSFODNN7EXAMPLE"),
    ("Temporary creds ASIAY34FZKBOKMUTVV7A expire tonight.", "ASIAY34FZKBOKMUTVV7A"),
    ("My token is ghp_16C7e42F292c6912E7710c838347Ae178B4a, don't share it.",
     "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("CI uses gho_9a8B7c6D5e4F3g2H1i0JkLmNoPqRsTuVwXyZ12 now.", "gho_9a8B7c6D5e4F3g2H1i0JkLmNoPqRsTuVwXyZ12"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV is the PAT.",
     "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"),
    ("The GitLab one: glpat-xK9mP2vL8nQ4rT6wY1zB.", "glpat-xK9mP2vL8nQ4rT6wY1zB"),
    ("Slack bot token xoxb-2048-4096-Zq8NfR3kLm9PwX2a for the alerts.", "xoxb-2048-4096-Zq8NfR3kLm9PwX2a"),
    ("Webhook uses xoxp-1234567890-0987654321-abcdefABCDEF.", "xoxp-1234567890-0987654321-abcdefABCDEF"),
    ("Stripe live key sk_live_4eC39HqLyjWDarjtT1zdp7dc in the vault.", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("Test key sk_test_51HxYzAbCdEfGhIjKlMn for the sandbox.", "sk_test_51HxYzAbCdEfGhIjKlMn"),
    ("Publishable pk_live_9sLkQ2mWx7RtYb3VnZp8 is fine to embed?", "pk_live_9sLkQ2mWx7RtYb3VnZp8"),
    ("The OpenAI key is sk-proj-Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7 okay.", "sk-proj-Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7"),
    ("Paste sk-ant-api03-Xy7Zw9Qv2Rt5Lp8Mn4Kj6Hg into the config.", "sk-ant-api03-Xy7Zw9Qv2Rt5Lp8Mn4Kj6Hg"),
    ("Old key sk-4fJ8kL2mN9pQ3rS7tU1vW5xY0zA6bC", "sk-4fJ8kL2mN9pQ3rS7tU1vW5xY0zA6bC"),
    ("Maps API AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY works.", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
    ("OAuth ya29.a0AfH6SMBx7Kq2Lp9Zr4Nw8Vt3 was in the log.", "ya29.a0AfH6SMBx7Kq2Lp9Zr4Nw8Vt3"),
    ("Publish with npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 please.", "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ("SendGrid SG.aB3dE5fG7hJ9kL1mN3pQ.rS5tU7vW9xY1zA3bC5dE7fG9 for mail.",
     "SG.aB3dE5fG7hJ9kL1mN3pQ.rS5tU7vW9xY1zA3bC5dE7fG9"),
    ("HF token hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345 for downloads.", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    ("Session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ("curl with Bearer Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4 header.", "Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
     "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----",
     "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----"),
    ("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\n-----END PRIVATE KEY-----",
     "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\n-----END PRIVATE KEY-----"),
    ("The password is hunter2, write it down.", "hunter2"),
    ("Okay so the wifi password is BlueCactus42.", "BlueCactus42"),
    ("The password for the VPN is Tr0ub4dor&3 until Monday.", "Tr0ub4dor&3"),
    ("Her PIN is 4921 so don't forget.", "4921"),
    ("The passcode: 778812 for the door.", "778812"),
    ("My passphrase is correct-horse-battery-staple.", "correct-horse-battery-staple"),
    ('The admin password is "open sesame 99" with spaces.', '"open sesame 99"'),
    ("Root password will be Winter2026! after the rotation.", "Winter2026!"),
    ("The security code is 392 on the back.", "392"),
    ("API key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0 for the old service.", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ("Card 4111 1111 1111 1111 expires next year.", "4111 1111 1111 1111"),
    ("Charge it to 5500-0000-0000-0004 please.", "5500-0000-0000-0004"),
    ("Amex 378282246310005 is the company card.", "378282246310005"),
    ("Use 6011111111111117 for the test.", "6011111111111117"),
    ("Visa 4012888888881881, CVV later.", "4012888888881881"),
    ("The number is 3530 1113 3330 0000 on the JCB.", "3530 1113 3330 0000"),
    ("Wire it to GB82 WEST 1234 5698 7654 32 by Friday.", "GB82 WEST 1234 5698 7654 32"),
    ("IBAN DE89370400440532013000 for the invoice.", "DE89370400440532013000"),
    ("Pay into FR1420041010050500013M02606 today.", "FR1420041010050500013M02606"),
    ("NL91ABNA0417164300 is the Dutch account.", "NL91ABNA0417164300"),
    ("My social is 123-45-6789 if they ask.", "123-45-6789"),
    ("SSN 078-05-1120 was the famous wallet one.", "078-05-1120"),
    ("NI number JG 10 37 23 B on the form.", "JG 10 37 23 B"),
    ("National insurance AB123456C is his.", "AB123456C"),
    ("The secret is Zx9!qL2#vB7 keep it safe.", "Zx9!qL2#vB7"),
    ("Use aB3xK9mQ2wL7pZ4nR8tV6yC1 as the shared secret.", "aB3xK9mQ2wL7pZ4nR8tV6yC1"),
    ("Set DB_PASSWORD=kT7mQ2xL9pW4zB8nV3 in prod.", "kT7mQ2xL9pW4zB8nV3"),
    ("The signing secret Wq8Zt3Lm9Xp2Rk7Vn4Bj6Hy1 rotates monthly.", "Wq8Zt3Lm9Xp2Rk7Vn4Bj6Hy1"),
]

LOOK_ALIKES: list[str] = [
    "The password policy changed last week.",
    "We need to reset the password flow in the app.",
    "The password is required for every new account.",
    "Her password was wrong three times, so she got locked out.",
    "The PIN pad on the terminal is broken.",
    "Tokens are counted per request in the new pricing.",
    "The secret to the launch was a small team.",
    "Commit 3f786850e387550fdab836ed7e6dc881de23001b fixed the build.",
    "Request id 550e8400-e29b-41d4-a716-446655440000 failed at noon.",
    "Checksum d41d8cd98f00b204e9800998ecf8427e matches.",
    "Revenue grew 1234567890 percent, jokingly said Bob.",
    "Order number 4111111111111112 shipped yesterday.",
    "Call me at +1 415 555 0132 after lunch.",
    "Our phone line is 020 7946 0958.",
    "The meeting is on 2026-11-30 at 14:00.",
    "Version 3.54.1.0 of apsw bundles SQLite.",
    "The invoice total was 12,450.00 euros.",
    "Tracking code 1Z999AA10123456784 for the parcel.",
    "ISBN 978-3-16-148410-0 is the book.",
    "See https://example.com/docs/getting-started for the guide.",
    "The file lives in /home/alice/projects/braincue/daemon/store.py.",
    "Email alice.smith@example.com about the contract.",
    "The internationalization work is done.",
    "Antidisestablishmentarianism is a long word.",
    "We use PostgreSQL15 and Python311 on the servers.",
    "The room number is B-204 on the second floor.",
    "He said the code is ready for review.",
    "Our API key rotation happens every quarter.",
    "The token bucket algorithm limits the rate.",
    "Skip the sk-learn section, we use numpy.",
    "The ghost town was empty by noon.",
    "She works at AKIA Consulting in Berlin.",
    "GB is ahead of DE in the rankings this year.",
    "The project codename is BlueCactus.",
    "Deadline is Friday the 13th, 2026.",
    "Ticket JIRA-48213 covers the migration.",
    "The model scored 73.9 percent on recall at five.",
    "Set the timeout to 30000 milliseconds.",
    "Our budget is 4,500,000 dollars for 2027.",
    "The SKU is WIDGET-2000-BLUE-XL.",
    "The card game starts at eight.",
    "Wire the money after the contract is signed.",
    "The PIN code feature ships next sprint.",
    "A passcode screen appears on wake.",
    "Use the camelCaseVariableNamesInJavaScript convention.",
    "She wrote ThisIsAVeryLongIdentifierName in the code.",
    "The new hire starts on Monday in the Paris office.",
    "Call extension 4921 for the front desk.",
    "Room 123-45 is booked, not 123-46.",
    "Flight LH2043 departs at 07:15 from gate B12.",
    "The secret sauce is good documentation.",
    "The password manager rollout is complete for the finance team.",
]


def _spans(text: str) -> list[str]:
    return [text[f.start : f.end] for f in find_sensitive(text)]


def test_corpus_precision_and_recall() -> None:
    assert len(SECRETS) >= 50 and len(LOOK_ALIKES) >= 50
    caught = [text for text, secret in SECRETS if secret not in redact(text).text]
    false_alarms = [text for text in LOOK_ALIKES if find_sensitive(text)]
    true_positives = len(caught)
    precision = true_positives / max(1, true_positives + len(false_alarms))
    recall = true_positives / len(SECRETS)
    print(f"\nsensitive gate: recall {recall:.1%} ({true_positives}/{len(SECRETS)}), "
          f"precision {precision:.1%} ({len(false_alarms)} false alarms in {len(LOOK_ALIKES)})")
    missed = [text for text, _ in SECRETS if text not in caught]
    assert not missed, f"missed secrets: {missed}"
    assert not false_alarms, f"false alarms: {[(t, _spans(t)) for t in false_alarms]}"


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_redaction_removes_the_secret(text: str, secret: str) -> None:
    result = redact(text)
    assert result.count >= 1
    assert secret not in result.text
    assert "[redacted" in result.text


def test_redaction_keeps_the_rest_and_counts_kinds() -> None:
    text = "Card 4111 1111 1111 1111 and the password is hunter2; see you Friday."
    result = redact(text)
    assert result.text == "Card [redacted card number] and the password is [redacted password]; see you Friday."
    assert result.kinds() == {"card number": 1, "password": 1}


def test_clean_text_is_unchanged() -> None:
    text = "We agreed to ship the beta on Friday."
    assert redact(text).text == text
    assert redact(text).count == 0


def test_checksums() -> None:
    assert luhn_valid("4111111111111111")
    assert not luhn_valid("4111111111111112")
    assert iban_valid("GB82 WEST 1234 5698 7654 32")
    assert not iban_valid("GB83 WEST 1234 5698 7654 32")


# -- following the secret: what a model wrote from a source that held one ----------------------

# (a source turn holding the secret with its cue, what a model wrote from it, the value)
PARAPHRASED: list[tuple[str, str, str]] = [
    ("The user is deploy and the password is Tangerine-Walrus-4417, and the API key is sk-live-9f8a7b6c5d4e3f2a1b0c.",
     "Vendor will use deploy and Tangerine-Walrus-4417 for the staging database", "Tangerine-Walrus-4417"),
    ("The user is deploy and the password is Tangerine-Walrus-4417.",
     "Use tangerine-walrus-4417 to log in to staging.", "Tangerine-Walrus-4417"),
    ("The user is deploy and the password is Tangerine-Walrus-4417.",
     "TANGERINE WALRUS 4417 is the key for staging.", "Tangerine-Walrus-4417"),
    ("The user is deploy and the password is Tangerine-Walrus-4417.",
     "Credentials: deploy / T-A-N-G-E-R-I-N-E-W-A-L-R-U-S-4-4-1-7", "Tangerine-Walrus-4417"),
    ("The user is deploy and the password is Tangerine-Walrus-4417.",
     "They log in with Tangerine Walrus and a number.", "Tangerine-Walrus"),
    ("The user is deploy and the password is Tangerine-Walrus-4417.",
     "The login ends in walrus_4417.", "walrus_4417"),
    ("The wifi password is BlueCactus42.", "Guests connect with BlueCactus42.", "BlueCactus42"),
    ("The wifi password is BlueCactus42.", "Guest wifi: bluecactus42", "bluecactus42"),
    ("The wifi password is BlueCactus42.", "Wifi is blue cactus 42.", "blue cactus 42"),
    ("The password for the VPN is Tr0ub4dor&3 until Monday.", "VPN access via Tr0ub4dor&3 until Monday.", "Tr0ub4dor"),
    ("Her PIN is 4921 so don't forget.", "She unlocks the safe with 4921.", "4921"),
    ("Her PIN is 4921 so don't forget.", "Her code is 49-21.", "49-21"),
    ("The passcode: 778812 for the door.", "The door opens with 778 812.", "778 812"),
    ("My passphrase is correct-horse-battery-staple.", "He uses Correct Horse Battery Staple everywhere.", "Correct Horse Battery Staple"),
    ("My passphrase is correct-horse-battery-staple.", "The phrase starts correct horse.", "correct horse"),
    ("Root password will be Winter2026! after the rotation.", "After rotation root uses winter2026.", "winter2026"),
    ("API key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0 for the old service.", "The old service authenticates with 9F8E7D6C5B4A39281706F5E4D3C2B1A0.",
     "9F8E7D6C5B4A39281706F5E4D3C2B1A0"),
    ("My token is ghp_16C7e42F292c6912E7710c838347Ae178B4a, don't share it.",
     "CI authenticates with 16C7e42F292c6912E7710c838347Ae178B4a from GitHub.", "16C7e42F292c6912E7710c838347Ae178B4a"),
    ("Stripe live key sk_live_4eC39HqLyjWDarjtT1zdp7dc in the vault.", "Payments use 4eC39HqLyjWDarjtT1zdp7dc.", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("The API key is sk-live-9f8a7b6c5d4e3f2a1b0c.", "The key ends in 9f8a7b6c5d4e3f2a1b0c.", "9f8a7b6c5d4e3f2a1b0c"),
    ("The API key is sk-live-9f8a7b6c5d4e3f2a1b0c.", "Key: SK LIVE 9F8A7B6C5D4E3F2A1B0C", "SK LIVE 9F8A7B6C5D4E3F2A1B0C"),
    ("The secret is Zx9!qL2#vB7 keep it safe.", "Keep zx9 ql2 vb7 safe.", "zx9 ql2 vb7"),
    ("Card 4111 1111 1111 1111 expires next year.", "Charge the card 4111-1111-1111-1111.", "4111-1111-1111-1111"),
    ("My social is 123-45-6789 if they ask.", "His SSN, 123 45 6789, goes on the form.", "123 45 6789"),
    ("Set DB_PASSWORD=kT7mQ2xL9pW4zB8nV3 in prod.", "Production connects with KT7MQ2XL9PW4ZB8NV3.", "KT7MQ2XL9PW4ZB8NV3"),
]


def test_paraphrased_leaks_are_caught_and_look_alikes_pass() -> None:
    assert len(PARAPHRASED) >= 21
    today = [written for _, written, _ in PARAPHRASED if find_sensitive(written)]
    caught = [written for source, written, value in PARAPHRASED
              if value not in Gate.of([source]).redact(written).text]
    # a gate that knows every secret above still passes every look-alike, but for one that
    # holds a known value itself ("extension 4921" after "her PIN is 4921"): following the
    # secret means masking that too
    knows_all = Gate.of([source for source, _, _ in PARAPHRASED])
    holds_value = ["Call extension 4921 for the front desk."]
    false_alarms = [t for t in LOOK_ALIKES if knows_all.find(t) and t not in holds_value]
    assert all(knows_all.find(t) for t in holds_value)
    print(f"\nparaphrased leaks: the gate that follows the secret catches {len(caught)}/"
          f"{len(PARAPHRASED)} (the detectors alone {len(today)}/{len(PARAPHRASED)}); "
          f"false alarms {len(false_alarms)}/{len(LOOK_ALIKES) - len(holds_value)} with every "
          "secret known")
    assert caught == [written for _, written, _ in PARAPHRASED]
    assert not false_alarms, [(t, knows_all.find(t)) for t in false_alarms]


def test_the_gate_keeps_ordinary_words_of_a_secret() -> None:
    gate = Gate.of(["The password is Tangerine-Walrus-4417."])
    for text in ("The tangerine was great.", "We saw a walrus at the zoo.", "Room 4417 is free."):
        assert gate.redact(text).text == text


def test_mask_lines_masks_a_secret_named_in_another_turn() -> None:
    lines = ["me: the staging password is Tangerine-Walrus-4417", "them: so tangerine walrus 4417, got it"]
    masked = mask_lines(lines)
    assert all("4417" not in line for line in masked), masked


# -- spoken forms a scanner of code cannot know ----------------------------------------------

SPOKEN: list[tuple[str, str, str]] = [  # (the turn before, the turn, the value in it)
    ("", "Log in as ops-admin with Kestrel-Quarry-5521 and check the queue.", "Kestrel-Quarry-5521"),
    ("", "Sign in as maria.lopez, using SunnyDays!88, on the portal.", "SunnyDays!88"),
    ("", "Use Copper7Lantern to log in to the NAS.", "Copper7Lantern"),
    ("", "The token for the deploy bot is ghp_Q7w2Lk9XbR4mTz8NcV1pY6sJd3Hf5Ga0Ue2K.",
     "ghp_Q7w2Lk9XbR4mTz8NcV1pY6sJd3Hf5Ga0Ue2K"),
    ("And the door code?", "It's 4417-2291.", "4417-2291"),
    ("What's the PIN for the card?", "Uh, two six zero nine, three three one five.",
     "two six zero nine, three three one five"),
    ("What was the old password again?", "Hmm, hunter2? No, Hunter2024.", "Hunter2024"),
    ("", "The alarm code's six one six one.", "six one six one"),
    ("", "Just ssh in as pi with bramble-Yard-12, the address is on the case.", "bramble-Yard-12"),
    ("", "The relay identifies to the broker with lumen-Farrow-733.", "lumen-Farrow-733"),
    ("", "Mount it and type glacier Ferry Thistle 40 as the password.", "glacier Ferry Thistle 40"),
    ("I'm locked out of the printer's web page.", "Type MarbleOwl61Dusk, it's what I set.",
     "MarbleOwl61Dusk"),
    ("How do the guests get on the booking site?", "Give them TomAndSue0908, it's on the card.",
     "TomAndSue0908"),
    ("", "At the boot prompt type Rk#4willow!Bay to unlock the disk.", "Rk#4willow!Bay"),
    ("", "The deed box dial goes right to sixteen, left to four, right to thirty-nine.",
     "right to sixteen, left to four, right to thirty-nine"),
    ("", "Turn it left to 8, then right to 25, then left to 61.",
     "left to 8, then right to 25, then left to 61"),
    ("The wifi keeps dropping me.", "Reconnect with PurpleTrain66Sky, it changed yesterday.",
     "PurpleTrain66Sky"),
]

SPOKEN_LOOK_ALIKES: list[tuple[str, str]] = [
    ("And the room number?", "It's 301."),
    ("What's the error code?", "It's 5003."),
    ("Is the code ready?", "Yes, it passed 240 tests."),
    ("Did the token expire?", "Yes, at 14:00."),
    ("", "Log in as admin with your SSO account."),
    ("", "My extension is 4417, call me if it breaks."),
    ("", "The access key was revoked yesterday."),
    ("", "The key takeaway is that Q3 was strong."),
    ("Do you have a token for the washing machine?", "Yes, they're 2.40 each from reception."),
    ("", "Use 4 digits as the PIN, the app refuses six."),
    ("Which phone logs in to the portal best?", "Mine's a Pixel8Pro, on the website it is fine."),
    ("What does the site need?", "It runs on Windows11 or newer, or an iPhone15."),
    ("How do I get into the game?", "Boot the PS5 and pick the RTX4090 profile on the PC."),
    ("Is there a promo code?", "The sponsor code is CHEF30, anyone can use it for 30 percent off."),
    ("", "Type WELCOME10 at checkout for 10% off your first order."),
    ("", "Turn the volume knob left to 3 before the call."),
    ("How do I get into the conference?", "Show your badge, the QuickPass2024 app has it."),
    ("", "Go left to the lift, right to floor 3, then left to room 12."),
    ("", "The page loads in 2.5 seconds on a GalaxyS24Ultra."),
    ("Put a few more words on that slide.", "Sure, and Slide5 gets the chart."),
]


@pytest.mark.parametrize(("before", "text", "value"), SPOKEN)
def test_a_spoken_credential_is_masked(before: str, text: str, value: str) -> None:
    masked = mask_lines([text], before)[0]
    assert value not in masked and "[redacted" in masked


@pytest.mark.parametrize(("before", "text"), SPOKEN_LOOK_ALIKES)
def test_a_spoken_look_alike_stays(before: str, text: str) -> None:
    assert mask_lines([text], before) == [text]


def test_an_answer_is_a_secret_only_after_its_question() -> None:
    assert mask_lines(["It's 4417-2291."]) == ["It's 4417-2291."]
    assert mask_lines(["And the door code?", "It's 4417-2291."])[1] == "It's [redacted password]."
    # the same value repeated later in the passage is masked too
    masked = mask_lines(["And the door code?", "It's 4417-2291.", "So 4417-2291, thanks."])
    assert "4417" not in masked[2]


def test_a_chunk_that_opens_with_the_answer_reads_its_question(tmp_path: Path) -> None:
    with open_store(tmp_path / "profile") as store:
        store.chunk_limit = 40  # every turn a chunk of its own
        recorded_session(store, ["Rita here. And the door code?", "It's 4417-2291."])
        bodies = [r[0] for r in store.db.read(lambda c: sql.rows(
            c, "SELECT body FROM chunks ORDER BY id"))]
        assert bodies[1:] == ["me: It's [redacted password]."]
        turn = store.turns(1)[1]
        assert "4417" not in " ".join(t.text for t in store.turns_of_chunk(2))
        assert turn.text == "It's 4417-2291."  # the turn keeps the words as said


def test_a_marker_copied_from_a_masked_source_is_left_whole() -> None:
    copied = "The deploy bot's token is [redacted token]."
    assert mask_lines([copied]) == [copied]
    gate = Gate([Secret("password", "redacted")])  # a secret that is a marker's own word
    assert gate.redact("It was [redacted password], redacted.").text == (
        "It was [redacted password], [redacted password].")
