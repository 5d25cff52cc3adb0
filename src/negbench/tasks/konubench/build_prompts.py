"""The construction prompts of Thunder-KoNUBench (App. D), verbatim: what "verbatim" means is said
in ``tasks/nubench/build_prompts.py`` and docs/build_mcq.md (Figure 6's "년 부정 표현" → "넌 부정
표현" and Figure 5's "만들 어도" → "만들어도" are the two extraction artefacts repaired here)."""

from __future__ import annotations

from negbench.scoring.construction import Prompt

# -- Thunder-KoNUBench, App. D (the Korean versions; the English ones are translations) ----------
#: Figure 5 (``merge``, GPT-4.1 mini).
KO_MERGE = Prompt(
    "merge",
    "Thunder-KoNUBench App. D, Figure 5 (merge)",
    "너는 자연스럽게 논리적인 한 문장을 생성하는 전문가야. 아래 지침을 따라 여러 문장으로 이루어진 "
    "원문의 내용을 종합해서, 매끄럽고 자연스러운 한 문장을 생성해줘.",
    "- 대등적 연결어미('-고', '-지만', '-(으)나', '-(으)며 등)는 앞 절과 뒤 절이 독립적일 때만 사용할 것.\n"
    "- 대등적 연결어미가 쓰였을 때 지시대명사('이', '그', '저', '이것', '저것', '그것' 등), "
    "지시관형사('이', '그', '저' 등)와 절의 내용을 지칭하는 말이 들어가면 안 됨\n"
    "- 앞 절과 뒤 절의 내용이 종속적일 경우 종속적 연결어미('-아/어', '-아서/어서', '-기 때문에' 등)를 "
    "사용할 것\n"
    "- 보조사 '도', '만' 등은 사용하지 말 것\n"
    "- 위의 지침들을 지키기 위해 원문의 세부 정보를 삭제하여 문장을 만들어도 됨\n"
    "\n"
    "원문을 줄 테니, 다른 말은 하지 말고 한 문장만 생성해.\n"
    "원문: {sentence}\n"
    "생성된 문장:",
)

#: Figure 6 (``contradiction_generate``, GPT-5; no system message: Responses API ``input``).
KO_CONTRADICTION = Prompt(
    "contradiction",
    "Thunder-KoNUBench App. D, Figure 6 (contradiction)",
    None,
    "넌 부정 표현을 사용하지 않고, 원문과 양립할 수 없는 문장을 만드는 전문가야. 양립 불가능한 문장이란, "
    "원문이 참일 때 성립이 불가능한 문장을 말해. 원문을 줄 테니, 부정 표현을 사용하지 않고 원문과 "
    "양립할 수 없는 contradiction 문장을 생성해야 해. 단, contradiction 문장은 원문을 과도하게 "
    "축약하거나 핵심 요소(인물, 사건, 날짜, 장소 등)를 생략하지 말고, 원문의 전체 구조와 길이를 최대한 "
    "유지하면서 일부 표현만 바꾸어 만들어야 한다.\n"
    "<부정 표현>\n"
    "안/지 않다/못/지 못하다\n"
    "<부정 표현 예시>\n"
    "원문: 민주주의 지지자들이 비상사태 법이 공정한 재판과 투표 권리를 침해하는 행위라고 비판했으며, "
    "인권 단체가 1990년대부터 2010년까지 수천 명이 기소나 재판 없이 장기 수감되었다고 밝혔다.\n"
    "부정: 민주주의 지지자들이 비상사태 법이 공정한 재판과 투표 권리를 침해하는 행위라고 비판하지 "
    "않았거나, 인권 단체가 1990년대부터 2010년까지 수천 명이 기소나 재판 없이 장기 수감되었다고 "
    "밝히지 않았다.\n"
    "<contradiction 예시>\n"
    "원문: 1940년 8월 2일 비시 정부가 드골에게 사형을 선고했으며, 영국 정부와 드골이 관계가 원만하지 "
    "못해 충돌하였다.\n"
    "contradiction: 1940년 8월 2일 비시 정부가 드골에게 무죄를 선고했으며, 영국 정부와 드골의 관계가 "
    "매우 우호적이었다.\n"
    "이제 원문을 줄 테니, contradiction에 해당하는 문장만 생성해. 다른 말은 하지 마.\n"
    "원문: {sentence}\n"
    "contradiction:",
)

#: Figure 7 (``paraphrase_generate``, GPT-5; no system message).
KO_PARAPHRASE = Prompt(
    "paraphrase",
    "Thunder-KoNUBench App. D, Figure 7 (paraphrase)",
    None,
    "너는 원문과 일치하지 않으면서도 원문의 의미를 유지하는 문장을 생성하는 paraphrase 전문가야. "
    "원문을 줄 테니, 원문의 의미를 유지하면서 문장 구조나 단어가 수정된 문장을 생성해줘. 원문과 동일한 "
    "문장을 생성해서는 안 돼. 수정된 문장은 원문이 참이라면 반드시 참이어야 해. 즉, 원문에서 세부 "
    "요소가 삭제되는 것은 괜찮지만 세부 요소가 추가되어서는 안 돼.\n"
    "<paraphrase 예시>\n"
    "원문: 우루과이는 2023년 코파 아메리카 8강전에서 페루와의 경기에서 승부차기로 패해 대회에서 "
    "탈락했다.\n"
    "paraphrase: 2023년 코파 아메리카의 8강전에서 우루과이가 페루에 패했다.\n"
    "원문: 이어로는 경기도 이천시와 여주시를 연결하는 14.9km 길이의 도로이다.\n"
    "paraphrase: 이어로는 경기도에 있는 도로이다.\n"
    "원문: 마이클 시인은 1969년 2월 5일에 태어난 웨일스 출신의 영국 배우이다.\n"
    "paraphrase: 마이클 시인의 출생일과 출생지는 각각 1969년 2월 5일과 웨일스이고, 영국 배우이다.\n"
    "이제 원문을 줄 테니, paraphrase 문장을 생성해. 다른 말은 하지 마.\n"
    "원문: {sentence}\n"
    "paraphrase:",
)


#: The default prompt of each LLM stage (no conditionals: the KoNUBench paper generates none).
PROMPTS: dict[str, Prompt] = {
    "merge": KO_MERGE,
    "contradiction": KO_CONTRADICTION,
    "paraphrase": KO_PARAPHRASE,
}
