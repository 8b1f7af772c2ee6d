"""Dashboard test personas: the API tests' world (tests.api.conftest), each user with a signed-in browser
session (django.test.Client) instead of a token.

alice: admin of team "alpha"; carol: editor on alpha; bob: viewer on alpha; mallory: admin of team "beta";
nobody: signed in, in no team; anonymous: not signed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from tests.api.conftest import World, build_world, no_broker  # noqa: F401  (fixtures re-exported)


@dataclass
class Browsers:
    world: World
    alice: Client
    carol: Client
    bob: Client
    mallory: Client
    nobody: Client
    anonymous: Client


# The search form's layout space: 3 x 2 x 1 x 2 layouts of Llama 3 8B.
SPACE_FORM: dict[str, str] = {
    "space_tp": "1, 2, 4",
    "space_pp": "1, 2",
    "space_cp": "1",
    "space_microbatch_seqs": "1, 2",
}


def preset_fields(**overrides: Any) -> dict[str, Any]:
    """The dashboard's "from the catalog's presets" form for Llama 3 8B on 64 H100 in Quebec, with overrides."""
    fields = {
        "model": "llama3-8b",
        "node": "dgx-h100",
        "gpus": "64",
        "region": "quebec",
        "total_tokens": "1e12",
        "seq_len": "8192",
        "global_batch_tokens": "4194304",
        "tp": "",
        "pp": "",
        "cp": "",
    }
    fields.update(overrides)
    return fields


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def world(db: None) -> World:
    return build_world()


@pytest.fixture
def browsers(world: World) -> Browsers:
    return Browsers(
        world=world,
        alice=signed_in(world.alice.user),
        carol=signed_in(world.carol.user),
        bob=signed_in(world.bob.user),
        mallory=signed_in(world.mallory.user),
        nobody=signed_in(world.nobody.user),
        anonymous=Client(),
    )
