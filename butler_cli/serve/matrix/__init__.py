"""The butler in a Matrix room (`butler serve` with a ``[matrix]`` section).

``settings`` (the section, checked), ``card`` (a park as a message: the inbox card's content),
``words`` (a reply or a reaction read as a decision), ``chat`` (the room's conversation),
``channel`` (the client: connects out to the homeserver, announces parks, takes decisions
through the inbox's one door, answers chat turns). Only ``channel`` loads the client library
(matrix-nio), and only when the section is there. What survives a restart (the sync token,
which park was announced as which event, the events already taken) is ``app.chat.room_state``.
"""
