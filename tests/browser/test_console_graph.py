"""The console's Graph page: an entity's neighbourhood drawn as SVG, tabled, as of a moment.

Against a real server over a graph seeded through the graph services, once per graph
backend (Apache AGE and the relational tables: tests/graph_backends.py), over HTTP and
in Debian's chromium.
"""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from app.console.graph_svg import layout
from app.services.graph import operations as ops
from app.services.graph.models import RecordIn, RelationRef
from app.services.graph.neighbourhood import entity_neighbourhood
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.runtime import Elephant
from tests.console_support import (
    ConsoleSite,
    foreign_requests,
    requests_made,
    screenshot,
    sign_in,
    signed_in_client,
    wait_for,
)
from tests.graph_backends import graph_backend_fixture, settings_fixture

__all__ = ["graph_backend_fixture", "settings_fixture"]  # the fixtures, once per backend

PAGE = "/ui/t/console/graph"
ADA = "Ada Lovelace"


@pytest.fixture(scope="module")
def seeded(console_site: ConsoleSite, elephant: Elephant) -> ConsoleSite:
    """Ada and her neighbours: a relation that ended, one that begins in the future, one
    hypothesis, a second hop, observations; and a note whose extracted facts link entities."""
    tenant = console_site.tenant
    ops.record(
        elephant,
        tenant,
        RecordIn.model_validate(
            {
                "entities": [
                    {"name": ADA, "entity_type": "person", "observations": [
                        "Wrote the first published algorithm",
                        {"content": "Chose the Analytical Engine", "kind": "decided"},
                    ]},
                    {"name": "Analytical Engine", "entity_type": "artifact"},
                    {"name": "Charles Babbage", "entity_type": "person"},
                    {"name": "Royal Society", "entity_type": "organization"},
                    {"name": "Poetry Club", "entity_type": "organization"},
                    {"name": "Difference Engine", "entity_type": "artifact"},
                    {"name": "Lonely Lighthouse", "entity_type": "place"},
                ],
                "relations": [
                    {"source": ADA, "relation_type": "uses", "target": "Analytical Engine",
                     "valid_from": "2020-01-01T00:00:00Z", "epistemic": "assertion"},
                    {"source": ADA, "relation_type": "knows", "target": "Charles Babbage",
                     "valid_from": "2021-06-01T00:00:00Z", "epistemic": "hypothesis"},
                    {"source": ADA, "relation_type": "member_of", "target": "Poetry Club",
                     "valid_from": "2019-03-01T00:00:00Z", "epistemic": "speculation"},
                    {"source": "Charles Babbage", "relation_type": "works_at",
                     "target": "Royal Society", "valid_from": "2018-01-01T00:00:00Z"},
                    {"source": ADA, "relation_type": "depends_on", "target": "Difference Engine",
                     "valid_from": "2090-01-01T00:00:00Z", "epistemic": "assertion"},
                ],
            }
        ),
    )  # fmt: skip
    ops.invalidate_relations(
        elephant,
        tenant,
        [RelationRef(source=ADA, relation_type="member_of", target="Poetry Club")],
    )
    commit_note(
        elephant,
        tenant,
        NoteIn(text="Grace Hopper met Ada Lovelace at the Analytical Engine exhibition in London."),
        wait=True,
    )
    return console_site


def _page(site: ConsoleSite, **params: Any) -> str:
    with signed_in_client(site, site.keys["read"]) as client:
        answer = client.get(PAGE, params=params)
    assert answer.status_code == 200, answer.text[:800]
    return html.unescape(answer.text)


def _relations(text: str) -> set[tuple[str, str, str]]:
    """(source, relation, state) of every edge drawn in the SVG."""
    return {
        (m.group(2), m.group(1), m.group(4))
        for m in re.finditer(
            r'<g class="edge [a-z]+ [a-z]+" data-relation="([a-z_]+)" data-source="([^"]+)" '
            r'data-target="([^"]+)" data-state="([a-z]+)"',
            text,
        )
    }


# ------------------------------------------------------------------ service and layout


def test_the_service_walks_every_relation_and_judges_each_at_the_instant(
    seeded: ConsoleSite, elephant: Elephant
) -> None:
    now = entity_neighbourhood(elephant, "console", "ada lovelace", hops=1)
    assert now.centre.name == ADA
    kinds = {e.relation_type for e in now.edges}
    assert {"uses", "knows"} <= kinds
    assert "member_of" not in kinds and "depends_on" not in kinds  # ended / not yet
    every = entity_neighbourhood(elephant, "console", ADA, hops=1, every=True)
    states = {e.relation_type: e.state for e in every.edges}
    assert states["member_of"] == "ended" and states["depends_on"] == "pending"
    assert states["uses"] == "valid"
    back = entity_neighbourhood(
        elephant, "console", ADA, hops=1, as_of=datetime(2019, 6, 1, tzinfo=UTC)
    )
    assert [e.relation_type for e in back.edges] == ["member_of"]
    assert {n.name for n in back.nodes} == {ADA, "Poetry Club"}
    assert datetime(2019, 3, 1, tzinfo=UTC) in now.moments  # the slider's stops
    assert datetime(2090, 1, 1, tzinfo=UTC) in now.moments
    two = entity_neighbourhood(elephant, "console", ADA, hops=2)
    assert {"Royal Society"} <= {n.name for n in two.nodes if n.hops == 2}
    assert any(o.kind == "decided" for o in now.observations)


def test_the_layout_is_deterministic_with_rings_by_hop(
    seeded: ConsoleSite, elephant: Elephant
) -> None:
    view = entity_neighbourhood(elephant, "console", ADA, hops=2, every=True)
    first, second = layout(view.nodes, view.edges), layout(view.nodes, view.edges)
    assert first == second
    assert first.positions[view.centre.key].x == 0 and first.positions[view.centre.key].y == 0
    for node in view.nodes:
        point = first.positions[node.key]
        if node.hops:
            radius = (point.x**2 + point.y**2) ** 0.5
            assert abs(radius - first.rings[node.hops - 1]) < 0.01


# ------------------------------------------------------------------ HTTP


def test_the_page_draws_and_tables_the_neighbourhood(seeded: ConsoleSite) -> None:
    text = _page(seeded, entity=ADA)
    assert '<svg id="graph-svg"' in text
    assert f'<g class="node centre" data-name="{ADA}"' in text
    for name in ("Analytical Engine", "Charles Babbage"):
        assert f'data-name="{name}"' in text
    assert 'data-name="Poetry Club"' not in text  # ended: not valid now
    drawn = _relations(text)
    assert (ADA, "uses", "valid") in drawn and (ADA, "knows", "valid") in drawn
    assert '<g class="edge hypothesis valid" data-relation="knows"' in text
    assert 'id="graph-relations"' in text and 'id="graph-observations"' in text
    assert "Wrote the first published algorithm" in text
    assert "recorded through the graph API" in text
    assert 'type="range" id="at"' in text and "data-autosubmit" in text

    every = _relations(_page(seeded, entity=ADA, show="all"))
    assert (ADA, "member_of", "ended") in every and (ADA, "depends_on", "pending") in every

    back = _page(seeded, entity=ADA, as_of="2019-06-01T00:00:00Z")
    assert _relations(back) == {(ADA, "member_of", "valid")}


def test_a_relation_from_an_extracted_fact_names_its_source_fact(seeded: ConsoleSite) -> None:
    text = _page(seeded, entity="Grace Hopper", show="all")
    if "mentions" not in text:
        pytest.skip("the offline extractor linked no entities of this note")
    assert "exhibition in London" in text  # the source fact, in the table


def test_an_unknown_entity_or_bad_input_is_a_clear_page_not_a_500(seeded: ConsoleSite) -> None:
    with signed_in_client(seeded, seeded.keys["read"]) as client:
        unknown = client.get(PAGE, params={"entity": "Ada Lovelac"})
        assert unknown.status_code == 404
        body = html.unescape(unknown.text)
        assert "no entity named 'Ada Lovelac'" in body
        assert 'id="graph-suggestions"' in body and ADA in body  # the search's suggestions
        bad_date = client.get(PAGE, params={"entity": ADA, "as_of": "next tuesday-ish"})
        assert bad_date.status_code == 422
        assert "as_of" in bad_date.text
        too_far = client.get(PAGE, params={"entity": ADA, "hops": "7"})
        assert too_far.status_code == 422
        assert "hops" in too_far.text
        alone = html.unescape(client.get(PAGE, params={"entity": "lonely lighthouse"}).text)
        assert 'id="graph-no-relations"' in alone and 'max="0"' in alone  # only "now"
        start = client.get(PAGE)
        assert start.status_code == 200
        assert 'id="graph-entities"' in start.text and ADA in start.text


# ------------------------------------------------------------------ browser


def test_in_a_browser_the_graph_recentres_and_follows_the_as_of_slider(
    chromium: Any, seeded: ConsoleSite
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    requests_made(chromium)
    sign_in(chromium, seeded, seeded.keys["read"])
    chromium.find_element(By.LINK_TEXT, "Graph").click()
    field = wait_for(chromium, "input#entity")
    assert chromium.find_element(By.CSS_SELECTOR, "label[for=entity]").text == "Entity"
    field.send_keys(ADA + Keys.ENTER)
    wait_for(chromium, f'svg g.node.centre[data-name="{ADA}"]')
    names = {
        a.get_attribute("data-name") for a in chromium.find_elements(By.CSS_SELECTOR, "svg a.node")
    }
    assert {"Analytical Engine", "Charles Babbage"} <= names
    labels = [t.text for t in chromium.find_elements(By.CSS_SELECTOR, "svg .edge-label")]
    assert "uses" in labels and "knows" in labels
    rows = chromium.find_elements(By.CSS_SELECTOR, "#graph-relations tbody tr")
    assert any(
        r.find_elements(By.TAG_NAME, "td")[1].text == "knows"
        and "hypothesis" in r.text
        and "Charles Babbage" in r.text
        for r in rows
    )
    observations = chromium.find_element(By.ID, "graph-observations").text
    assert "Wrote the first published algorithm" in observations
    screenshot(chromium, "graph-centre")

    # recentre: a node is a link
    chromium.find_element(By.CSS_SELECTOR, 'svg a.node[data-name="Charles Babbage"]').click()
    wait_for(chromium, 'svg g.node.centre[data-name="Charles Babbage"]')
    query = parse_qs(urlsplit(chromium.current_url).query)
    assert query["entity"] == ["Charles Babbage"]
    assert chromium.find_elements(By.CSS_SELECTOR, f'svg a.node[data-name="{ADA}"]')
    screenshot(chromium, "graph-recentred")

    # two hops from Babbage reach Ada's other neighbours
    chromium.find_element(By.CSS_SELECTOR, "select#hops option[value='2']").click()
    wait_for(chromium, 'svg a.node.hop-2[data-name="Analytical Engine"]')
    assert chromium.find_element(By.ID, "hops").get_attribute("value") == "2"

    # back to Ada; move the as-of slider to its first stop (2019-03-01: only member_of)
    ada = chromium.find_element(By.CSS_SELECTOR, f'svg a.node[data-name="{ADA}"]')
    chromium.execute_script("arguments[0].focus()", ada)  # a node link takes keyboard focus
    assert chromium.switch_to.active_element.get_attribute("data-name") == ADA
    chromium.switch_to.active_element.send_keys(Keys.ENTER)
    wait_for(chromium, f'svg g.node.centre[data-name="{ADA}"]')
    chromium.get(chromium.current_url.replace("hops=2", "hops=1"))
    slider = wait_for(chromium, "input#at")
    assert chromium.find_element(By.ID, "at-value").text == "now"
    assert not chromium.find_elements(By.CSS_SELECTOR, 'svg g.edge[data-relation="member_of"]')
    slider.send_keys(Keys.HOME)  # change → the form submits itself (console.js)
    wait_for(chromium, 'svg g.edge[data-relation="member_of"][data-state="valid"]')
    assert "at=0" in chromium.current_url
    assert chromium.find_element(By.ID, "at-value").text.startswith("2019-03-01")
    assert not chromium.find_elements(By.CSS_SELECTOR, 'svg g.edge[data-relation="uses"]')
    screenshot(chromium, "graph-as-of-2019")

    # all relations at the last stop: the ended one greyed, the future one "not yet"
    wait_for(chromium, "input#at").send_keys(Keys.END)
    wait_for(chromium, 'svg g.edge[data-relation="depends_on"][data-state="valid"]')
    chromium.find_element(By.ID, "show-all").click()
    wait_for(chromium, 'svg g.edge.ended[data-relation="member_of"]')
    assert chromium.find_element(By.ID, "show-all").is_selected()
    chromium.find_element(By.CSS_SELECTOR, "label[for=at]")
    screenshot(chromium, "graph-all-relations")
    assert foreign_requests(chromium, seeded) == []


def test_without_javascript_the_submit_buttons_do_the_same(
    seeded: ConsoleSite,
) -> None:
    """The time form posts at (a stop) with the entity and hops it was drawn for."""
    with signed_in_client(seeded, seeded.keys["read"]) as client:
        first = client.get(PAGE, params={"entity": ADA, "hops": 1, "at": 0})
        assert first.status_code == 200
        text = html.unescape(first.text)
        assert _relations(text) == {(ADA, "member_of", "valid")}
        assert 'value="0"' in text
        assert re.search(r'<button type="submit">Apply</button>', text)
