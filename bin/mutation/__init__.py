"""The parts of bin/mutate.py, the mutation testing of chatmem's security core.

- `targets`: the modules scored and each one's focused tests (`TARGETS`).
- `hand_made`: the table of hand-made mutants of module-level constants.
- `regexes`: mutants of module-level regexes and of the redaction shapes.
- `scratch`: the scratch copies under `.mutate/` and the `--postgres` databases.
- `mutmut_runs`: mutmut's mutants, a full run or a `--quick` sample.
- `text_runs`: the mutants of a module's text, run by plain pytest.
- `report`: each mutant's outcome and the equivalents listed in tests/MUTANTS.md.
- `cli`: the command.
"""
