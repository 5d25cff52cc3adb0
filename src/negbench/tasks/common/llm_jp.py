"""The llm-jp-eval v1 prompt format shared by the Japanese tasks (JSTS-Neg Figure 7, JNLI-Neg).

``get_evaluation_prompt``: intro, ``\\n\\n### 指示:\\n``, instruction; each shot and the test input
as ``\\n\\n### 入力:\\n{input}\\n\\n### 応答:\\n`` (+ the shot's output).  As an lm-eval description
+ few-shot block: description = intro + instruction + "\\n\\n", query =
``### 入力:\\n{input}\\n\\n### 応答:\\n``, target delimiter "" and few-shot delimiter "\\n\\n".
"""

from __future__ import annotations

#: llm-jp-eval's fixed system text (the first paragraph of JSTS-Neg's Figure 7).
LLM_JP_INTRO = "以下は、タスクを説明する指示と、文脈のある入力の組み合わせです。要求を適切に満たす応答を書きなさい。"
TARGET_DELIMITER = ""
FEWSHOT_DELIMITER = "\n\n"
#: Greedy generation stops at a blank line or at the next ``###`` heading (llm-jp-eval keeps the
#: text before the first ``\n\n``); an answer needs a few tokens.
STOP = ("\n\n", "###")
MAX_TOKENS = 16


def description(instruction: str) -> str:
    return f"{LLM_JP_INTRO}\n\n### 指示:\n{instruction}\n\n"


def query(input_text: str) -> str:
    return f"### 入力:\n{input_text}\n\n### 応答:\n"
