"""The checks on a generated session summary or profile, on what small summarizers really wrote: the
embedded model's profile of assistant boilerplate, a profile that echoed its instructions, a summary that
was the session's last reply (a code block), one that copied the user's first message, and good ones."""

from __future__ import annotations

import pytest

from zeph_cli.context.generated_check import (
    Said,
    asks,
    boilerplate,
    check_generated,
    check_stored,
    code_share,
    content_words,
    grounding,
)
from zeph_cli.context.session_memory_blocks import instructions

PACKAGING_USER = [
    "I'm a data engineer and I mostly write Python. How do I package a Python library with pyproject.toml?",
    "What is the difference between setuptools and hatchling?",
    "How do I add a console script entry point?",
    "How do I publish the package to PyPI?",
    "How should I version my releases?",
    "How do I build a wheel locally?",
]
LAST_REPLY = (
    "To build a wheel locally, install the build frontend and run it in the project folder:\n"
    "```bash\npython -m pip install build\npython -m build --wheel\nls dist/\n```"
)
PACKAGING_REPLIES = [
    "Write a pyproject.toml with a [project] table (name, version, dependencies) and a [build-system] table.",
    "Setuptools is the long-standing default; hatchling is the lighter build backend of the Hatch project.",
    "Under [project.scripts], map a command name to a function: mytool = \"mytool.cli:main\".",
    "Build the distributions, then upload them with twine: twine upload dist/*.",
    "Most libraries use semantic versioning: MAJOR.MINOR.PATCH.",
    LAST_REPLY,
]
SAID = Said(PACKAGING_USER, PACKAGING_REPLIES, instructions())

# What the embedded model (SmolLM2-135M) wrote as the profile and the summaries.
BOILERPLATE_PROFILE = (
    "I'm here to help you with whatever your needs are. Whether you have a question about a project, need "
    "some advice or just want to chat, feel free to ask!"
)
ECHOED_PROFILE = "ACK: You maintain a short profile of a user…"
ECHOED_PROFILE_LONG = (
    "ACK: You maintain a short profile of a user for an assistant: stable preferences (language, tone, tools), "
    "work background and long-term focus. Leave out one-off tasks."
)
COPIED_USER_MESSAGE = "I'm a data engineer and I mostly write Python. How do I package a Python library with PyPI?"
QUESTION_PROFILE = "I'm a data engineer and I write Python. How do you package a Python library with PyPI?"
REPEATED_REQUEST = (
    "This is a request for a two-week trip to Japan in April and what cities should I visit? The user wants to "
    "bake bread using a recipe."
)


@pytest.mark.parametrize(
    ("text", "what", "reason"),
    [
        (BOILERPLATE_PROFILE, "profile", "generic assistant text (“I'm here to help”)"),
        (ECHOED_PROFILE, "profile", "repeats its own instructions"),
        (ECHOED_PROFILE_LONG, "profile", "repeats its own instructions"),
        (LAST_REPLY, "summary", "copies a reply of the session"),
        (COPIED_USER_MESSAGE, "summary", "copies a message the user wrote"),
        (QUESTION_PROFILE, "profile", "asks a question (“How do you package a Python library with PyPI?”)"),
        ("```python\nimport requests\nrequests.get(url).json()\n```", "summary", "code, not a summary"),
        ("import requests\nresponse = requests.get(url)\nprint(response.json())", "summary", "code, not a summary"),
        ("The user asked how to build a Python wheel:\n```\npython -m build\n```", "summary", "holds a code block"),
        ("The assistant provided a comprehensive overview of best practices and useful resources for beginners.",
         "summary", "not about what the user wrote: 0 of its 8 content words"),
        ("Thanks for the conversation, it was a pleasure.", "summary", "says nothing about the user"),
        ("", "summary", "empty"),
    ],
)
def test_what_small_summarizers_wrote_is_discarded_with_a_reason(text, what, reason):
    verdict = check_generated(text, SAID, what=what)
    assert not verdict.ok
    assert verdict.reason.startswith(reason), verdict.reason


def test_a_question_copied_from_another_session_is_discarded_too():
    travel = Said(["I'm planning a two-week trip to Japan in April. What cities should I visit?"], [], instructions())
    verdict = check_generated(REPEATED_REQUEST, travel)
    assert not verdict.ok and verdict.reason.startswith("asks a question"), verdict.reason


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("The user is packaging a Python library with pyproject.toml: comparing setuptools and hatchling, adding a "
         "console script entry point, building a wheel and publishing to PyPI; how to version releases is still open.",
         "summary"),
        ("Packaging a Python library: pyproject.toml, hatchling rather than setuptools, a console script, wheels "
         "built locally and published to PyPI. Open: a versioning scheme.", "summary"),
        ("- Data engineer who mostly writes Python\n- Packages and publishes Python libraries (pyproject.toml, PyPI)",
         "profile"),
        ("Data engineer; writes Python; publishes libraries to PyPI with hatchling.", "profile"),
        ("The user builds a wheel with `python -m build` and publishes it to PyPI.", "summary"),
    ],
)
def test_summaries_and_profiles_about_the_user_are_kept(text, what):
    assert check_generated(text, SAID, what=what).ok, check_generated(text, SAID, what=what).reason


def test_a_summary_in_the_users_language_is_kept():
    said = Said(["Je prépare un voyage de deux semaines au Japon en avril. Quelles villes visiter ?",
                 "Le JR pass vaut-il le coup ?", "Que manger à Osaka ?"], [], instructions())
    text = "Voyage de deux semaines au Japon en avril : villes à visiter, le JR pass, que manger à Osaka."
    assert check_generated(text, said).ok, check_generated(text, said).reason


def test_words_count_by_their_stem_and_words_about_users_and_sessions_do_not_count():
    assert content_words("The user asked about publishing packages and the session discussed it") == [
        "publishing", "packages"]
    assert grounding("publishing packages", ["How do I publish the package?"]) == (2, 2)
    assert grounding("baking sourdough", ["How do I publish the package?"]) == (0, 2)


def test_the_parts_name_what_they_found():
    assert boilerplate("Sure, feel free to ask.") == "feel free to"
    assert boilerplate("The user prefers short answers.") == ""
    assert asks("Works in Rust. How do I fix the borrow checker?") == "How do I fix the borrow checker?"
    assert asks("Still open: whether the cache should expire?") == ""  # an open point, asked of no one
    assert code_share("```bash\npython -m build\n```") == 1.0 and code_share("The user ran pip install build.") == 0.0
    assert code_share("x = 1\ny = 2\nThe user set two variables in the shell today.") < 0.5


def test_what_was_stored_before_the_checks_is_checked_on_the_text_alone():
    assert not check_stored(BOILERPLATE_PROFILE, what="profile", instructions=instructions()).ok
    assert not check_stored(ECHOED_PROFILE, what="profile", instructions=instructions()).ok
    assert not check_stored(LAST_REPLY, instructions=instructions()).ok
    assert check_stored("- Data engineer who mostly writes Python", what="profile", instructions=instructions()).ok


def test_a_profile_update_may_keep_the_current_profile_word_for_word():
    current = "- Prefers short answers in German\n- Reviews Rust code at work"
    said = Said(["How do I fix a lifetime error?"], ["Add a lifetime parameter."], instructions(), known=[current])
    assert check_generated(current, said, what="profile").ok
    assert not check_generated(current, Said(["How do I fix a lifetime error?"], [], instructions()), what="profile").ok


# ---- scripts written without spaces: runs of Han, kana, Hangul or Thai are compared as character bigrams ----

NEWSBOT_USER = [
    "我在用Python开发一个新闻爬虫项目，名字叫newsbot。",
    "怎么用asyncio同时抓取多个新闻网站？",
    "抓到的新闻要存到PostgreSQL里，表结构怎么设计比较好？",
    "爬虫经常被网站封IP，有什么办法？",
]
NEWSBOT_REPLIES = [
    "可以用asyncio配合aiohttp：为每个网站创建一个任务，用asyncio.gather并发执行，并用信号量限制并发数量。",
    "建议建一张articles表，字段包括id、url（唯一索引）、标题、正文、来源网站和抓取时间，并在抓取时间上建索引。",
    "可以降低抓取频率、随机化请求间隔、轮换User-Agent，必要时使用代理池来轮换IP地址。",
]
NEWSBOT = Said(NEWSBOT_USER, NEWSBOT_REPLIES, instructions())


@pytest.mark.parametrize(
    "text",
    [
        "用户在用Python开发名为newsbot的新闻爬虫项目：用asyncio同时抓取多个新闻网站，新闻存到PostgreSQL，"
        "正在设计表结构，并想办法应对网站封IP。",
        "- 用Python开发新闻爬虫newsbot\n- 用asyncio抓取多个新闻网站，存到PostgreSQL",
    ],
)
def test_a_faithful_chinese_summary_of_chinese_messages_is_kept(text):
    verdict = check_generated(text, NEWSBOT)
    assert verdict.ok, verdict.reason


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (NEWSBOT_REPLIES[2], "copies a reply of the session"),
        ("用户问到：" + NEWSBOT_REPLIES[1], "copies a reply of the session"),
        # the same reply, a few characters changed
        ("建一张articles表，字段有id、url（唯一索引）、标题、正文、来源网站和抓取时间，并在抓取时间上建个索引。",
         "copies a reply of the session"),
        ("我很乐意帮助你解决任何问题！如果你还有其他问题，请随时告诉我。", "generic assistant text"),
        ("希望以上内容对你有所帮助。", "generic assistant text"),
        ("用户喜欢在周末烘焙酸面包，并研究不同面粉的吸水率和发酵时间。", "not about what the user wrote"),
        ("我是数据工程师。我该怎么给爬虫设置代理池？", "asks a question"),
    ],
)
def test_a_chinese_summary_that_copies_a_reply_is_boilerplate_or_is_not_about_the_user_is_discarded(text, reason):
    verdict = check_generated(text, NEWSBOT)
    assert not verdict.ok and verdict.reason.startswith(reason), verdict.reason


def test_chinese_content_is_counted_in_bigrams_without_function_characters_or_words_about_users():
    assert content_words("用户在用Python开发新闻爬虫") == ["python", "开发", "发新", "新闻", "闻爬", "爬虫"]
    assert grounding("新闻爬虫", ["我在写一个新闻爬虫"]) == (3, 3)
    assert grounding("烘焙面包", ["我在写一个新闻爬虫"]) == (0, 3)


TRIP_USER = [
    "4月に2週間、日本を旅行する予定です。京都と大阪ではどこを回ればいいですか？",
    "JRパスは買ったほうがいいですか？",
    "大阪で食べるべきものを教えてください。",
]


def test_a_faithful_japanese_summary_is_kept_and_one_about_something_else_is_not():
    said = Said(TRIP_USER, ["京都では清水寺と伏見稲荷大社、大阪では道頓堀がおすすめです。"], instructions())
    text = "ユーザーは4月に2週間の日本旅行を予定している。京都と大阪の回り方、JRパスを買うべきか、大阪で食べるべきもの。"
    assert check_generated(text, said).ok, check_generated(text, said).reason
    assert content_words("JRパスを買うべきか") == ["jr", "パス"]  # kana endings and particles say nothing
    other = "ユーザーはRustでコンパイラを書いており、借用チェッカーのエラーに悩んでいる。"
    assert check_generated(other, said).reason.startswith("not about what the user wrote")
    assert check_generated("何かお手伝いできることがあれば、お気軽にどうぞ。", said).reason.startswith(
        "generic assistant text")


def test_korean_thai_and_hindi_summaries_of_their_users_messages_are_kept():
    assert content_words("사용자는 파이썬으로") == ["파이", "이썬", "썬으", "으로"]
    assert content_words("ดึงข่าว") == ["ดึง", "งข่", "ข่า", "าว"]  # a vowel or a tone mark stays on its letter
    assert content_words("समाचार क्रॉलर") == ["समाचार", "क्रॉलर"]
    korean = Said(["저는 파이썬으로 뉴스 크롤러를 개발하고 있어요.", "크롤링한 기사를 PostgreSQL에 저장하고 싶어요."])
    assert check_generated("사용자는 파이썬으로 뉴스 크롤러를 개발하고, 기사를 PostgreSQL에 저장하려 한다.", korean).ok
    thai = Said(["ฉันกำลังเขียนโปรแกรมดึงข่าวด้วยภาษาไพธอน", "จะเก็บข่าวลงฐานข้อมูลอย่างไรดี"])
    verdict = check_generated("เขียนโปรแกรมดึงข่าวด้วยภาษาไพธอน และเก็บข่าวลงฐานข้อมูล", thai)
    assert verdict.ok, verdict.reason
    hindi = Said(["मैं पायथन में एक समाचार क्रॉलर बना रहा हूँ।", "समाचार को डेटाबेस में कैसे सहेजूँ?"])
    verdict = check_generated("पायथन में समाचार क्रॉलर बनाना और समाचार डेटाबेस में सहेजना।", hindi)
    assert verdict.ok, verdict.reason
