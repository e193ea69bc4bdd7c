"Hidden State Test" by "ConflictBench Studio"

[Two buttons that print the same word and set a hidden number differently; reset clears it. Built by
tests/authoring/test_quetzal.py with the real compiler: the printed text cannot tell the states apart, the key must.]

The Test Room is a room. "A grey panel with a red button and a blue button."

Secret is a number that varies. Secret is 0.

Pressing red is an action applying to nothing. Understand "press red" as pressing red.
Carry out pressing red: now secret is 1; say "Click."

Pressing blue is an action applying to nothing. Understand "press blue" as pressing blue.
Carry out pressing blue: now secret is 2; say "Click."

Resetting is an action applying to nothing. Understand "reset" as resetting.
Carry out resetting: now secret is 0; say "Click."

Pulling the lever is an action applying to nothing. Understand "pull lever" as pulling the lever.
Carry out pulling the lever: if secret is 1, say "The hatch opens."; otherwise say "The lever sticks."
