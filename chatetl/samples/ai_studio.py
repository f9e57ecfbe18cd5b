"""Generated Google AI Studio prompt files as a Drive Takeout carries them (a "Google AI Studio"
folder of files without an extension): a chat with a system instruction, a Drive upload, thinking,
search grounding and code execution, and a prompt branched off it ("Branch from here"). Never real data."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from chatetl.samples.common import BASE_TIME, zip_files

START = BASE_TIME + 6 * 86400  # 2026-01-07
FOLDER = "Takeout/Drive/Google AI Studio"
TITLE = "Budget for a Lisbon trip"


def _time(offset: float) -> str:
    return datetime.fromtimestamp(START + offset, tz=UTC).isoformat().replace("+00:00", "Z")


def _settings() -> dict[str, Any]:
    return {
        "temperature": 1.0, "model": "models/gemini-2.5-pro", "topP": 0.95, "topK": 64, "maxOutputTokens": 65536,
        "enableCodeExecution": True, "enableSearchAsATool": True, "thinkingBudget": -1,
    }


def _opening() -> list[dict[str, Any]]:
    return [
        {"driveDocument": {"id": "1sampleDriveDocumentIdForTheBudgetSheet"}, "role": "user", "tokenCount": 2110, "createTime": _time(0)},
        {"text": "Here are my flight and hotel costs. What will four days in Lisbon cost in total?", "role": "user",
         "tokenCount": 19, "createTime": _time(1)},
        {"text": "**Adding up the costs**\n\nFlights 180 EUR, hotel 4 x 95 EUR; food and transport need an estimate.",
         "role": "model", "tokenCount": 310, "isThought": True, "thinkingBudget": -1, "createTime": _time(8),
         "thoughtSignatures": ["c2FtcGxlLXNpZ25hdHVyZQ=="],
         "parts": [{"text": "**Adding up the costs**\n\nFlights 180 EUR, hotel 4 x 95 EUR; food and transport need an estimate.", "thought": True}]},
        {"executableCode": {"language": "PYTHON", "code": "flights = 180\nhotel = 4 * 95\nfood = 4 * 40\nprint(flights + hotel + food)"},
         "role": "model", "tokenCount": 41, "createTime": _time(10)},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "720\n"}, "role": "model", "tokenCount": 4, "createTime": _time(11)},
        {"text": "About **720 EUR**: 180 EUR flights, 380 EUR hotel and some 160 EUR for food. "
                 "A 24-hour transit pass costs about 7 EUR a day.",
         "role": "model", "finishReason": "STOP", "tokenCount": 52, "createTime": _time(12),
         "grounding": {"groundingChunks": [{"web": {"uri": "https://transit.example.org/lisbon-passes", "title": "Lisbon transit passes"}}],
                       "webSearchQueries": ["lisbon 24 hour transit pass price"]}},
    ]


def _budget_prompt() -> dict[str, Any]:
    chunks = _opening() + [
        {"text": "Can I do it for 600 EUR?", "role": "user", "tokenCount": 9, "createTime": _time(60)},
        {"text": "Yes, if you pick a hostel at about 65 EUR a night: that saves 120 EUR.", "role": "model",
         "finishReason": "STOP", "tokenCount": 21, "createTime": _time(66),
         "branchChildren": [{"promptName": "prompts/1sampleBranchPromptId", "displayName": f"Branch of {TITLE}"}]},
    ]
    return {
        "runSettings": _settings(),
        "systemInstruction": {"text": "You are a careful travel budget planner. Show your arithmetic."},
        "chunkedPrompt": {"chunks": chunks, "pendingInputs": [{"text": "", "role": "user"}]},
    }


def _branch_prompt() -> dict[str, Any]:
    """The prompt AI Studio saves on "Branch from here": the chat up to that answer, then its own way."""
    chunks = _opening()
    chunks[-1] = dict(chunks[-1], branchParent={"promptName": "prompts/1sampleBudgetPromptId", "displayName": TITLE})
    chunks += [
        {"text": "What if I go in August instead?", "role": "user", "tokenCount": 8, "createTime": _time(3600)},
        {"text": "August is high season: expect the hotel at about 140 EUR a night, some 900 EUR in total.", "role": "model",
         "finishReason": "STOP", "tokenCount": 24, "createTime": _time(3607)},
    ]
    return {
        "runSettings": _settings(),
        "systemInstruction": {"text": "You are a careful travel budget planner. Show your arithmetic."},
        "chunkedPrompt": {"chunks": chunks, "pendingInputs": [{"text": "and in December?", "role": "user"}]},
    }


def sample() -> tuple[str, bytes]:
    files = {
        f"{FOLDER}/{TITLE}": json.dumps(_budget_prompt(), indent=2, ensure_ascii=False),
        f"{FOLDER}/Branch of {TITLE}": json.dumps(_branch_prompt(), indent=2, ensure_ascii=False),
    }
    return "raw/samples/ai-studio-prompts.zip", zip_files(files)
