"""Tasks run on a butler: `butler run`'s batch and `butler memory consolidate` (a park is
decided and continued through the one door, ``app/parks/door.decide``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from butler_cli.app.chat import conversations as convs
from butler_cli.app.config.options import RunOptions
from butler_cli.app.run.butler import Butler, ObserverFactory
from butler_cli.app.run.report import TaskReport
from butler_cli.core.messages import ImageBlock, Message
from butler_cli.core.notices import notice
from butler_cli.memory.capture import Consolidated, consolidate


def run_tasks(
    tasks: Sequence[str],
    opts: RunOptions,
    observer_for: ObserverFactory | None = None,
    prompt_for: Callable[[str], str] | None = None,
    continuing: tuple[bool, str | None] = (False, None),
    images: Sequence[ImageBlock] = (),
) -> Iterator[TaskReport]:
    """Build once (a bad model or policy fails before any task), then run each task in order,
    each its own conversation; ``prompt_for`` turns a task into what the model is sent (the
    task with its context). ``continuing`` (`run -c` / `--conversation ID`, one task): the
    task is the next turn of that saved conversation (this folder's last one for ``(True,
    None)``), its earlier turns sent with it. ``images`` (attached) go with each task."""
    with Butler.build(opts) as butler:
        for i, task in enumerate(tasks):
            history: list[Message] = []
            cid: str | None = None
            if continuing[0]:
                record = convs.find(butler.conversations, continuing[1], str(butler.cwd))
                if record is None:
                    notice("no earlier conversation in this folder; this task starts a new one")
                else:
                    history = [Message.from_dict(m) for m in record.messages]
                    cid = record.summary.id
            if cid is None:
                cid = convs.begin(butler, "run", task)
            observer = observer_for(i, task, cid) if observer_for is not None else None
            prompt = prompt_for(task) if prompt_for is not None else None
            try:
                report = butler.run_task(
                    task, observer, history=history, prompt=prompt, conversation=cid, images=images
                )
            except KeyboardInterrupt:
                convs.interrupted(butler, cid)  # then the command says so and exits 130
                raise
            convs.record_turn(butler, cid, report, len(history))
            yield report


def consolidate_memory(model: str | None, profile: str | None) -> Consolidated | None:
    """`butler memory consolidate`: older captured turns folded into one remembered profile,
    summarized by the model on a butler of its own; None when there is nothing to fold."""
    with Butler.build(RunOptions(model=model, profile=profile)) as butler:
        return consolidate(butler.memory, butler.summarize)
