"""Made by butler at main dcadb60 (issue 36's starting point): a home whose chat turns were
captured as ``User: … / Butler: …`` pairs and folded by the old consolidation into one
uncited profile blob (the very text an echoing model gave), plus turns not yet folded."""

import sys
from pathlib import Path

from butler_cli.memory.capture import capture_turn, consolidate
from butler_cli.memory.store import open_memory

home = Path(sys.argv[1])
mem = open_memory(home)
for i in range(12):
    capture_turn(mem, f"plan the garden part {i}: tomatoes and basil", f"Noted part {i}.")
consolidate(mem, lambda prompt: "First answer: hello there. Your notes mention oat milk.", keep=4)
for i in range(30):
    capture_turn(mem, f"I moved to Porto in {2000 + i}", f"Welcome to Porto ({i}).")
mem.remember("Ana is allergic to peanuts", "semantic", {"importance": 5})
mem.close()
