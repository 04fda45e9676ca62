"""Requests that come while the workspace folders load wait for them (lsp/server.py `wait_for_projects`):
woken when a load ends (`loading_moved`), never by polling, and given up after the timeout, once."""

from __future__ import annotations

import asyncio

from harn_ls.lsp.server import create_server


def _counting(ls) -> list[int]:
    """Count how often the server looks at whether its projects are loaded."""
    looks = [0]
    real = ls.projects_loaded

    def projects_loaded() -> bool:
        looks[0] += 1
        return real()

    ls.projects_loaded = projects_loaded
    return looks


def test_a_request_waits_for_a_folder_load_without_polling(tmp_path):
    ls = create_server()
    gate = asyncio.Event()

    async def slow_add_folder(path: str) -> None:  # the folder's projects take their time to load
        await gate.wait()

    ls._add_folder = slow_add_folder
    looks = _counting(ls)

    async def scenario() -> tuple[int, bool, bool]:
        adding = asyncio.create_task(ls.add_folder(str(tmp_path)))
        await asyncio.sleep(0)
        assert not ls.projects_loaded()
        waiting = asyncio.create_task(ls.wait_for_projects(timeout=10))
        await asyncio.sleep(0.3)  # 15 looks when it polled every 20 ms
        looked_while_loading, done_early = looks[0], waiting.done()
        gate.set()
        await asyncio.wait_for(waiting, 5)
        await adding
        return looked_while_loading, done_early, ls.projects_loaded()

    looked, done_early, loaded = asyncio.run(scenario())
    assert not done_early and loaded
    assert looked <= 3, looked
    assert not ls._project_wait_over  # it ended with the load, not with the timeout


def test_a_wait_gives_up_at_its_timeout_and_no_request_waits_again():
    ls = create_server()
    ls.adding_folders = 1  # a folder that never finishes loading
    looks = _counting(ls)

    async def scenario() -> None:
        await asyncio.wait_for(ls.wait_for_projects(timeout=0.3), 5)
        assert ls._project_wait_over
        seen = looks[0]
        await asyncio.wait_for(ls.wait_for_projects(timeout=10), 0.5)  # answered at once from now on
        assert looks[0] <= seen + 1

    asyncio.run(scenario())
    assert looks[0] <= 4, looks[0]
