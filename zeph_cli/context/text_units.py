"""The units generated text is compared in: words where a script puts spaces between words, character
bigrams where it does not.

Invariant: pure (stdlib only, no I/O). `units(text)` keeps text order and lower-cases. A run of Han,
kana, Hangul, Thai, Lao, Khmer or Myanmar characters becomes its overlapping character bigrams (a run of
one character stays one unit), as CJK search analyzers do: two characters are the shortest unit that
carries meaning in Chinese and Japanese, and no dictionary is needed. A character carries the
combining marks that follow it (Thai vowels and tones, Devanagari matras), so neither a bigram nor a
word ever starts or ends inside a letter. Everything else is a word of letters, digits, underscores and
combining marks, with inner apostrophes kept (`don't`). `content_runs(text)` gives the same text's
unspaced runs split where the content of a summary cannot be: at kana particles and endings, at Chinese
function characters, at words about users and sessions.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Scripts written without spaces between words (Korean puts spaces between phrases, but glues particles
# to words: bigrams match a word whatever particle follows). Ranges: the iteration marks 々 〆, hiragana,
# katakana without the middle dot ・ (a separator), katakana extensions, CJK ideographs (extension A,
# the main block, compatibility, the supplementary planes), halfwidth katakana, Hangul jamo and
# syllables, Thai, Lao, Myanmar, Khmer.
_HIRAGANA = "\u3041-\u309f"
_KATAKANA = "\u30a0-\u30fa\u30fc-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_HAN = "\u3005\u3006\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_UNSPACED = (
    f"{_HIRAGANA}{_KATAKANA}{_HAN}\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
    "\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff"
)
# Combining marks of spaced scripts that `\w` does not match: Latin diacritics written apart, Cyrillic,
# Hebrew points, Arabic harakat, the Brahmic scripts of India and Sri Lanka (without the danda ।॥).
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u0610-\u061a\u064b-\u065f"
    "\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed\u0900-\u0963\u0966-\u0dff"
)
_LETTER = rf"(?:(?![{_UNSPACED}])[\w{_MARKS}])"

# Chinese characters that are grammar, not content (particles, pronouns, measure words, negation,
# prepositions): a bigram holding one says nothing about the user. Characters that also form common
# content words (能 in 功能, 地 in 本地, 对 in 对象, 要 in 重要, 会 in 会议) are not in the list.
CHINESE_FUNCTION_CHARS = frozenset("的了是我你您他她它们在和与及或并也都就又还很这那个些吗呢吧啊呀着把被将已而但其之于以为从到让给向由不没有想一")

# The words a summary or a profile uses to talk about a user and a session, in Chinese, Japanese, Korean
# and Thai (the English ones are generated_check.META_WORDS): cut out before the bigrams are made.
UNSPACED_META_WORDS = tuple(sorted("""
用户 使用者 会话 对话 聊天 助手 问题 提问 询问 讨论 话题 主题 希望 想要 需要 打算 计划 兴趣 喜欢 偏好 项目 任务
目前 当前 正在 最近 之前 之后 帮助 了解 学习 如何 怎么 怎样 什么 关于 有关 相关 涉及 包括 进行 使用 可以 可能 内容
信息 方面 总结 摘要 提到 表示 说明 解释 尚未 仍然 已经 继续 开始 方法 建议 细节 具体 各种 工作 研究 办法
ユーザー ユーザ 利用者 会話 セッション アシスタント 質問 相談 話題 希望 興味 関心 プロジェクト 現在 最近 内容 方法
説明 情報 予定 計画 作業 仕事 学習 検討 使用 利用 場合
사용자 유저 대화 세션 어시스턴트 질문 주제 프로젝트 현재 최근 관심 계획 작업 사용 방법 정보 내용 도움
ผู้ใช้ บทสนทนา คำถาม โครงการ ต้องการ สนใจ กำลัง
""".split(), key=len, reverse=True))


@lru_cache(maxsize=1)
def _patterns() -> tuple[re.Pattern[str], ...]:
    """Compiled on first use (a few milliseconds): a reply with no injected block to compare never pays."""
    return (
        re.compile(rf"(?P<run>[{_UNSPACED}]+)|(?P<word>{_LETTER}+(?:['’]{_LETTER}+)*)"),
        re.compile(f"[{_HIRAGANA}{_KATAKANA}]"),
        re.compile(f"[{_HIRAGANA}]+|[{_KATAKANA}]+|[^{_HIRAGANA}{_KATAKANA}]+"),
        re.compile(f"[{_HIRAGANA}]+"),
        re.compile("|".join(map(re.escape, UNSPACED_META_WORDS))),
    )


def _clusters(run: str) -> list[str]:
    """The run's characters, each with the combining marks that follow it."""
    out: list[str] = []
    for ch in run:
        if out and unicodedata.category(ch).startswith("M"):
            out[-1] += ch
        else:
            out.append(ch)
    return out


def bigrams(run: str, *, single: bool = True) -> list[str]:
    """Overlapping character bigrams of a run of an unspaced script; a single character is one unit
    (none when not `single`)."""
    chars = _clusters(run)
    if len(chars) < 2:
        return ["".join(chars)] if chars and single else []
    return [chars[i] + chars[i + 1] for i in range(len(chars) - 1)]


def units(text: str) -> list[str]:
    """The text's words and bigrams in order, lower-cased (`’` read as `'`)."""
    token = _patterns()[0]
    out: list[str] = []
    for match in token.finditer(text.lower()):
        run = match.group("run")
        if run is not None:
            out.extend(bigrams(run))
        else:
            out.append(match.group("word").replace("’", "'"))
    return out


def content_runs(text: str) -> list[tuple[str, bool]]:
    """The text's words (False) and the pieces of its unspaced runs that may carry content (True), in
    order: meta words cut out; in a text with kana, runs split where the script changes and hiragana
    (particles, endings) dropped; in one without, Chinese function characters cut out."""
    token, kana, script_run, only_hiragana, meta = _patterns()
    lowered = text.lower()
    japanese = bool(kana.search(lowered))
    out: list[tuple[str, bool]] = []
    for match in token.finditer(lowered):
        run = match.group("run")
        if run is None:
            out.append((match.group("word").replace("’", "'"), False))
            continue
        for piece in meta.split(run):
            parts = script_run.findall(piece) if japanese else [piece]
            for part in parts:
                if japanese and only_hiragana.fullmatch(part):
                    continue
                if not japanese:
                    cut = "".join(" " if ch in CHINESE_FUNCTION_CHARS else ch for ch in part)
                    out.extend((p, True) for p in cut.split())
                else:
                    out.append((part, True))
    return out
