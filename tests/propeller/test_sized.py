"""The engine's caches bounded by the sizes of what they keep (propeller/sized.py): the least recently used
dropped first once the sizes pass the bound, always the last one kept."""

from __future__ import annotations

from flytelite.propeller.sized import SizedCache


def test_the_least_recently_used_go_first_once_the_sizes_pass_the_bound():
    cache: SizedCache[str, str] = SizedCache(max_size=10)
    cache.put("a", "A", 4)
    cache.put("b", "B", 4)
    assert cache.get("a") == "A"  # now b is the least recently used
    cache.put("c", "C", 4)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("A", None, "C")


def test_a_popped_or_replaced_value_frees_its_size():
    cache: SizedCache[str, str] = SizedCache(max_size=10)
    cache.put("a", "A", 6)
    cache.put("a", "A2", 6)  # the same key again: counted once
    assert cache.pop("a") == "A2" and cache.pop("a") is None
    cache.put("b", "B", 5)
    cache.put("c", "C", 5)
    assert (cache.get("b"), cache.get("c")) == ("B", "C")


def test_one_value_larger_than_the_bound_is_kept():
    cache: SizedCache[str, str] = SizedCache(max_size=10)
    cache.put("big", "BIG", 20_000)
    assert cache.get("big") == "BIG"
    cache.put("small", "S", 1)
    assert (cache.get("big"), cache.get("small")) == (None, "S")
