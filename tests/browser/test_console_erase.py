"""The console's Erase page (admin scope): a dry run's report first, then the confirmed erasure.

Against a real server over data committed through the services (default graph backend),
over HTTP and in Debian's chromium; what was erased is checked through the services.
"""

from __future__ import annotations

import html
import re
from typing import Any

import httpx

from app.services.access import audit
from app.services.access.keys import KeyIn, create_key
from app.services.graph import operations as ops
from app.services.graph import reads
from app.services.graph.models import RecordIn
from app.services.memory import records
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.schemas import ConversationIn, NoteIn
from app.services.runtime import Elephant
from tests.console_support import (
    ConsoleSite,
    csrf_of,
    foreign_requests,
    requests_made,
    screenshot,
    sign_in,
    signed_in_client,
    wait_for,
)

PAGE = "/ui/t/console/erase"


def _count(text: str, table: str) -> int:
    found = re.search(
        rf'<tr data-table="{re.escape(table)}"[^>]*><th scope="row">.*?</th><td>(\d+)</td>', text
    )
    assert found is not None, f"no row for {table}"
    return int(found.group(1))


def _memories(elephant: Elephant, tenant: str, source: str | None = None) -> list[str]:
    page = records.list_memories(elephant, tenant, source=source, limit=200)
    return [m.text for m in page.items]


def _seed_source(elephant: Elephant, tenant: str, source: str) -> None:
    for text in (
        f"The {source} import says the heating in the office is fixed.",
        f"The {source} import says the quarterly review moved to Friday.",
    ):
        commit_note(elephant, tenant, NoteIn(text=text, source=source, force=True), wait=True)


def _form(client: httpx.Client, **fields: str) -> dict[str, str]:
    return {"csrf": csrf_of(client, PAGE), **fields}


# ------------------------------------------------------------------ HTTP


def test_only_admin_keys_reach_the_page(console_site: ConsoleSite) -> None:
    for scope in ("read", "write"):
        with signed_in_client(console_site, console_site.keys[scope]) as client:
            assert client.get(PAGE).status_code == 403
            token = csrf_of(client, "/ui/t/console/")
            refused = client.post(f"{PAGE}/preview", data={"csrf": token, "kind": "tenant"})
            assert refused.status_code == 403
            assert "/ui/t/console/erase" not in client.get("/ui/t/console/").text
    with signed_in_client(console_site, console_site.keys["admin"]) as client:
        page = client.get(PAGE)
        assert page.status_code == 200
        assert 'id="erase-form"' in page.text
        for kind in ("subject", "conversation", "source", "ids", "tenant"):
            assert f'id="kind-{kind}"' in page.text and f'for="kind-{kind}"' in page.text
        # without the CSRF token a form post is refused
        assert client.post(f"{PAGE}/preview", data={"kind": "tenant"}).status_code == 403


def test_bad_input_shows_the_form_again_with_what_to_fix(console_site: ConsoleSite) -> None:
    with signed_in_client(console_site, console_site.keys["admin"]) as client:
        blank = client.post(f"{PAGE}/preview", data=_form(client, kind="subject", subject=" "))
        assert blank.status_code == 422
        assert 'id="erase-error"' in blank.text and "subject" in blank.text
        ids = client.post(f"{PAGE}/preview", data=_form(client, kind="ids", memory_ids="nope"))
        assert ids.status_code == 422
        assert "memory_ids" in html.unescape(ids.text)
        assert 'value="ids" checked' in ids.text  # the choice is kept
        odd = client.post(f"{PAGE}/preview", data=_form(client, kind="everything"))
        assert odd.status_code == 422


def test_a_dry_run_reports_counts_and_removes_nothing_then_confirm_erases(
    console_site: ConsoleSite, elephant: Elephant
) -> None:
    tenant = console_site.tenant
    _seed_source(elephant, tenant, "crm")
    assert len(_memories(elephant, tenant, "crm")) == 2
    with signed_in_client(console_site, console_site.keys["admin"]) as client:
        dry = client.post(f"{PAGE}/preview", data=_form(client, kind="source", source="crm"))
        assert dry.status_code == 200, dry.text[:500]
        text = html.unescape(dry.text)
        assert "Dry run" in text and "nothing has been erased yet" in text
        assert _count(text, "memories") == 2
        assert 'id="erase-confirm"' in text and 'name="source" value="crm"' in text
        assert len(_memories(elephant, tenant, "crm")) == 2  # a dry run removes nothing
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', text)
        assert token is not None
        done = client.post(
            f"{PAGE}/confirm",
            data={"csrf": token.group(1), "kind": "source", "source": "crm", "subject": ""},
        )
        assert done.status_code == 200, done.text[:500]
        final = html.unescape(done.text)
        assert "Erased" in final and _count(final, "memories") == 2
        assert 'id="erase-confirm"' not in final
    assert _memories(elephant, tenant, "crm") == []
    logged = [e for e in audit.entries(elephant.db, tenant=tenant, limit=20) if e.action == "erase"]
    assert [e.detail["dry_run"] for e in logged[:2]] == [False, True]  # newest first
    assert "crm" not in str(logged[0].target)  # a digest, never the source itself


def test_erasing_the_whole_tenant_needs_its_id_typed(
    elephant: Elephant, console_site: ConsoleSite
) -> None:
    doomed = "doomed"
    key = create_key(elephant.db, KeyIn(tenant=doomed, scopes=["read", "write", "admin"])).key
    _seed_source(elephant, doomed, "old")
    page = f"/ui/t/{doomed}/erase"
    with signed_in_client(console_site, key) as client:
        token = csrf_of(client, page)
        dry = client.post(f"{page}/preview", data={"csrf": token, "kind": "tenant"})
        assert dry.status_code == 200
        text = html.unescape(dry.text)
        assert 'id="confirm_tenant"' in text and "Type the tenant id" in text
        assert _count(text, "memories") == 2 and _count(text, "api_keys") == 1
        wrong = client.post(
            f"{page}/confirm", data={"csrf": token, "kind": "tenant", "confirm_tenant": "console"}
        )
        assert wrong.status_code == 422
        assert "type its id (doomed)" in html.unescape(wrong.text)
        assert len(_memories(elephant, doomed)) == 2  # nothing erased
        done = client.post(
            f"{page}/confirm", data={"csrf": token, "kind": "tenant", "confirm_tenant": doomed}
        )
        assert done.status_code == 200, done.text[:500]
        assert 'id="erase-keys-gone"' in done.text
        assert client.get(page).status_code == 303  # its key went with it: signed out
    assert _memories(elephant, doomed) == []


# ------------------------------------------------------------------ browser


def test_in_a_browser_a_subject_is_erased_after_a_dry_run(
    chromium: Any, console_site: ConsoleSite, elephant: Elephant
) -> None:
    from selenium.webdriver.common.by import By

    tenant = console_site.tenant
    name = "Zed Quill"
    commit_note(
        elephant,
        tenant,
        NoteIn(text=f"{name} moved to Lisbon in 2021 and works on tide models.", force=True),
        wait=True,
    )
    commit_conversation(
        elephant,
        tenant,
        ConversationIn.model_validate(
            {
                "conversation_id": "quill-chat",
                "force": True,
                "turns": [
                    {"speaker": name, "text": "I finally finished the tide model."},
                    {"speaker": "Mo", "text": "Congratulations, Zed Quill!"},
                ],
            }
        ),
        wait=True,
    )
    ops.record(
        elephant,
        tenant,
        RecordIn.model_validate(
            {"entities": [{"name": name, "entity_type": "person",
                           "observations": ["Prefers tea to coffee"]}]}
        ),
    )  # fmt: skip
    assert any(name in text for text in _memories(elephant, tenant))
    assert reads.open_nodes(elephant, tenant, [name]).entities

    requests_made(chromium)
    sign_in(chromium, console_site, console_site.keys["admin"])
    chromium.find_element(By.LINK_TEXT, "Erase").click()
    wait_for(chromium, "form#erase-form")
    assert chromium.find_element(By.CSS_SELECTOR, "label[for=subject]").text == "Name"
    chromium.find_element(By.ID, "kind-subject").click()
    chromium.find_element(By.ID, "subject").send_keys(name)
    screenshot(chromium, "erase-form")
    chromium.find_element(By.ID, "erase-dry-run").click()

    status = wait_for(chromium, "#erase-status")
    assert "Dry run" in status.text
    counts = {
        row.get_attribute("data-table"): row.find_element(By.TAG_NAME, "td").text
        for row in chromium.find_elements(By.CSS_SELECTOR, "#erase-report tbody tr")
    }
    assert int(counts["memories"]) >= 2 and int(counts["turns"]) >= 1
    assert int(counts["graph-vertices"]) >= 1
    assert any(name in text for text in _memories(elephant, tenant))  # still there
    screenshot(chromium, "erase-dry-run")

    chromium.find_element(By.ID, "erase-confirm-button").click()
    chromium.switch_to.alert.accept()  # form[data-confirm] asks first
    status = wait_for(chromium, "#erase-status")
    assert status.text.startswith("Erased")
    screenshot(chromium, "erase-done")
    assert foreign_requests(chromium, console_site) == []

    assert not any(name in text for text in _memories(elephant, tenant))
    assert reads.open_nodes(elephant, tenant, [name]).missing == [name]
    assert records.list_memories(elephant, tenant, conversation="quill-chat").items == []
