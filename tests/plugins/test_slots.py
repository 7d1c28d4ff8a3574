"""Task slots lent by a holder that waits on others (plugins/machinery/slots.py)."""

from __future__ import annotations

from flytelite.plugins.machinery.slots import TaskSlots


def test_a_lent_slot_goes_to_a_waiter_and_comes_back_beyond_the_size():
    slots = TaskSlots(1)
    woken: list[str] = []
    assert slots.take("parent", lambda: None)
    assert not slots.take("child", lambda: woken.append("child"))
    slots.lend("parent")
    assert woken == ["child"] and slots.in_use() == 0
    assert slots.take("child", lambda: None) and slots.in_use() == 1
    slots.reclaim("parent")  # the parent's process works again: it counts, though the child has the slot
    assert slots.in_use() == 2
    slots.release("child")
    slots.release("parent")
    assert slots.in_use() == 0
    slots.lend("parent")  # nothing held: nothing lent, nothing reclaimed
    slots.reclaim("parent")
    assert slots.in_use() == 0


def test_a_holder_released_while_lending_is_forgotten():
    slots = TaskSlots(1)
    assert slots.take("parent", lambda: None)
    slots.lend("parent")
    slots.release("parent")
    slots.reclaim("parent")
    assert slots.in_use() == 0
