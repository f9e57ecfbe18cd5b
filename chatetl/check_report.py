"""What a data check reports, whatever it checks (the tables, the graph): passed or not, a
bounded list of example problems and counts; reports of parts add up to the whole's."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from chatetl.tally import Tally, all_passed, capped, summed_by

MAX_PROBLEMS = 50


@dataclass
class CheckReport(Tally):
    """A check's outcome; reports add up (`add`): passed only if every part passed, at most MAX_PROBLEMS examples."""

    passed: bool = summed_by(all_passed, default=True)
    problems: list[str] = summed_by(capped(MAX_PROBLEMS), default_factory=list)  # noqa: RUF009 - a field() with its rule
    problem_count: int = 0
    counts: Counter[str] = field(default_factory=Counter)

    def fail(self, problem: str) -> None:
        self.passed = False
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)
