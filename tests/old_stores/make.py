"""Made by butler at main 3f62b62 (the unicode61 index): the stores a user has today."""

import sys
from pathlib import Path

from butler_cli.memory.entries import Entry
from butler_cli.memory.store import open_memory
from butler_cli.store.conversations import ConversationStore

home = Path(sys.argv[1])
mem = open_memory(home)
texts = [
    "Ana adopted two puppies from the shelter in Porto",
    "我开了家卖奶茶的小店",
    "Ana is allergic to peanuts: never suggest recipes with them",
    "Ana's sister Mei lives in Lisbon and visits every August",
    "The dentist appointment moved to the ninth",
    "東京の天気は晴れが多い",
    "Ana runs a marathon every spring",
    "Ana prefers oolong tea in the morning",
]
mem.add_entries(
    Entry(
        f"m00old{i:04d}",
        "semantic" if i % 3 else "episodic",
        t,
        f"2023-05-{8 + i:02d}T13:56:00.000000+00:00",
        {"importance": 1 + i % 5},
    )
    for i, t in enumerate(texts)
)
work = open_memory(home, "work")
work.add_entries(
    [
        Entry(
            "m00oldw0001",
            "semantic",
            "The merger closes on Friday",
            "2023-06-01T09:00:00.000000+00:00",
            {"importance": 4},
        )
    ]
)
mem.close()
work.close()
conv = ConversationStore(home)
for title, answer in [
    ("Plan the garden: tomatoes and basil", "Plant the basil next to the tomatoes."),
    ("我开了家卖奶茶的小店，帮我想想周末的菜单", "周末可以试试黑糖珍珠和桂花乌龙。"),
    ("Which puppies did we adopt?", "You adopted two puppies in Porto."),
]:
    cid = conv.start(
        "run", title, {"model": "scripted", "policy": "ask", "cwd": "/tmp", "profile": "default"}
    )
    conv.append(
        cid,
        [
            {"role": "user", "content": [{"type": "text", "text": title}]},
            {"role": "assistant", "content": [{"type": "text", "text": answer}]},
        ],
        "done",
    )
conv.close()
