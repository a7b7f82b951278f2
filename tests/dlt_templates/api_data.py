"""The canned answers of the APIs dlt's templates call: small, made up, shaped as the real
APIs answer (nested objects and lists, as GitHub's issues carry), paginated where the
template paginates."""

from __future__ import annotations

import datetime
from typing import Any

from api_proxy import Pages

GITHUB = "api.github.com"
POKEAPI = "pokeapi.co"
CHESS = "api.chess.com"
GITHUB_RAW = "raw.githubusercontent.com"
# The default template's CSV: Our World in Data's natural disasters, as GitHub serves the raw
# file (the path percent-encoded as the client sends it).
DISASTERS_NAME = "Natural%20disasters%20from%201900%20to%202019%20-%20EMDAT%20(2020)"
DISASTERS_PATH = f"/owid/owid-datasets/master/datasets/{DISASTERS_NAME}/{DISASTERS_NAME}.csv"


def _recent(days_ago: int) -> str:
    """An ISO timestamp ``days_ago`` before now: the rest_api template starts its issues
    cursor 30 days before the day it runs, so fixed dates would fall out of its window."""
    moment = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=days_ago)
    return moment.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _issue(number: int, days_ago: int, labels: list[str]) -> dict[str, Any]:
    return {
        "id": 1000 + number,
        "number": number,
        "title": f"issue {number}",
        "state": "open",
        "updated_at": _recent(days_ago),
        "user": {"login": f"user{number % 2}", "id": 10 + number % 2},
        "labels": [{"id": 500 + i, "name": name} for i, name in enumerate(labels)],
        "comments": number % 3,
    }


def _comments(issue: int, count: int) -> list[dict[str, Any]]:
    return [
        {"id": issue * 100 + i, "body": f"comment {i} on {issue}", "user": {"login": "user0", "id": 10}}
        for i in range(count)
    ]


def _disasters_csv() -> str:
    """A CSV shaped as OWID's: an entity and a year, then counts, some cells empty."""
    header = (
        "Entity,Year,Number of deaths from drought,Number of people affected by floods,Economic damages\n"
    )
    rows = [
        f"{entity},{year},{'' if (year + i) % 4 == 0 else (year % 97) * (i + 1)},{year * 3 + i},"
        f"{'' if year % 3 == 0 else round(year * 1.25 + i, 2)}\n"
        for i, entity in enumerate(["All natural disasters", "Drought", "Flood", "Earthquake"])
        for year in range(1990, 2000)
    ]
    return header + "".join(rows)


def routes() -> dict[tuple[str, str], Pages]:
    issues = [_issue(1, 1, ["bug"]), _issue(2, 2, []), _issue(3, 3, ["bug", "question"])]
    repos = [
        {"id": 1, "name": "dlt", "stargazers_count": 3000, "topics": ["python", "elt"]},
        {"id": 2, "name": "verified-sources", "stargazers_count": 100, "topics": []},
        {"id": 3, "name": "dlthub-demo", "stargazers_count": 7, "topics": ["demo"]},
    ]
    named = [{"name": f"thing-{i}", "url": f"https://pokeapi.co/api/v2/x/{i}/"} for i in range(5)]
    table: dict[tuple[str, str], Pages] = {
        # GitHub: pages linked by a Link header (two issues on the first page, one on the second).
        (GITHUB, "/repos/dlt-hub/dlt/issues"): Pages((issues[:2], issues[2:]), "link"),
        (GITHUB, "/orgs/dlt-hub/repos"): Pages((repos[:2], repos[2:]), "link"),
        # PokeAPI: pages linked by "next" in the body.
        (POKEAPI, "/api/v2/pokemon"): Pages((named[:2], named[2:4], named[4:]), "next_url"),
        (POKEAPI, "/api/v2/berry"): Pages((named[:3], named[3:]), "next_url"),
        (POKEAPI, "/api/v2/location"): Pages((named[:5],), "next_url"),
        (GITHUB_RAW, DISASTERS_PATH): Pages((_disasters_csv(),), content_type="text/plain; charset=utf-8"),
    }
    for issue in issues:
        number = issue["number"]
        table[(GITHUB, f"/repos/dlt-hub/dlt/issues/{number}/comments")] = Pages(
            (_comments(number, issue["comments"]),)
        )
    for player_id, name in enumerate(["magnuscarlsen", "rpragchess"], start=1):
        table[(CHESS, f"/pub/player/{name}")] = Pages(
            ({"player_id": player_id, "username": name, "followers": 100 * player_id, "is_streamer": False},)
        )
        games = [
            {
                "url": f"https://www.chess.com/game/live/{player_id}{g}",
                "end_time": 1666000000 + g,
                "rated": g % 2 == 0,
                "white": {"username": name, "rating": 2800 + g},
                "black": {"username": f"opponent{g}", "rating": 2700 - g},
            }
            for g in range(player_id + 1)
        ]
        table[(CHESS, f"/pub/player/{name}/games/2022/10")] = Pages(({"games": games},))
    return table
