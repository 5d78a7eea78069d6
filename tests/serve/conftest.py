"""Fixtures of the serve tests: a tiny checkpoint with a chat template and a real `hamburger serve` process on it.

Module-scoped: each module that uses them writes its own checkpoint and starts its own server, once."""

import pytest
import torch

from tests.helpers import FOLD, KEY, LOOKUP, MAX_QUEUE, Server, save_tiny_chat_checkpoint


@pytest.fixture(scope="module")
def one_thread():
    """The reference generations share 2 cores with the servers: several torch threads would fight.
    (The modules that start servers use it for all their tests: `pytestmark = pytest.mark.usefixtures(...)`.)"""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, char_tokenizer):
    """The checkpoint folder, and (model, tokenizer) loaded from it to compute expected outputs."""
    from hamburger.core.checkpoint import load_checkpoint

    ckpt = save_tiny_chat_checkpoint(tmp_path_factory.mktemp("serve"), char_tokenizer)
    model, tok, _ = load_checkpoint(ckpt)
    return ckpt, model, tok


@pytest.fixture(scope="module")
def server(checkpoint, tmp_path_factory):
    log = tmp_path_factory.mktemp("logs") / "server.log"
    srv = Server(checkpoint[0], log, "--mode", "hamburger", "--api-key", KEY, "--confidence", "0.5",
                 "--max-batch-size", "8", "--max-queue", str(MAX_QUEUE), "--lookup", str(LOOKUP), "--fold", FOLD)
    try:
        yield srv.wait()
    finally:
        srv.stop()
