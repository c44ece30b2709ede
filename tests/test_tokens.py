import base64
import json
import os
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nbmemory import tokens
from nbmemory.tokens import TokenCounter, context_window, encoding_name_for_model, get_encoding
from support import run_python


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("openai/gpt-4o-mini", "o200k_base"),
        ("gpt-5.4", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("claude-sonnet-4-6", "cl100k_base"),
        ("ollama/llama3", "cl100k_base"),
        (None, "cl100k_base"),
    ],
)
def test_the_encoding_follows_the_model(model, encoding):
    assert encoding_name_for_model(model) == encoding
    assert TokenCounter(model).encoding_name == encoding


def test_counts_are_real_tiktoken_counts():
    assert TokenCounter("gpt-4o").count("hello world") == 2
    assert TokenCounter("gpt-4").count("tiktoken is great!") == 6
    assert TokenCounter("gpt-4o").count("<|endoftext|>") > 1


OFFLINE = """
import json, os
from nbmemory.tokens import TokenCounter
counter = TokenCounter("gpt-4o")
print(json.dumps([counter.count("offline counting works"), counter.encoding_name,
                  os.environ.get("TIKTOKEN_CACHE_DIR")]))
"""


def test_counting_never_downloads_and_leaves_the_environment_alone(tmp_path):
    dead_proxy = "http://127.0.0.1:9"
    env = {
        "HTTPS_PROXY": dead_proxy,
        "HTTP_PROXY": dead_proxy,
        "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache"),
    }
    result = run_python(OFFLINE, env=env)
    count, encoding, cache_dir = json.loads(result.stdout)
    assert (count, encoding) == (3, "o200k_base")
    assert cache_dir == str(tmp_path / "empty-cache")
    assert not (tmp_path / "empty-cache").exists()


def test_without_the_bundled_files_counts_are_estimated_with_a_warning(monkeypatch):
    monkeypatch.setattr(tokens, "get_encoding", lambda name: None)
    counter = TokenCounter("gpt-4o")
    with pytest.warns(UserWarning, match="estimated"):
        assert counter.count("x" * 10) == 3
    assert counter.encoding_name == tokens.APPROXIMATE


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o", 128_000),
        ("openai/gpt-4o", 128_000),
        ("claude-sonnet-4-5", 200_000),
        ("anthropic/claude-sonnet-4-5", 200_000),
        ("ollama/llama3", 8192),
        ("no-such-model", 16_000),
        (None, 16_000),
    ],
)
def test_context_windows_come_from_the_bundled_model_map(model, window):
    assert context_window(model) == window


def test_context_windows_need_no_litellm_import():
    code = (
        "import sys; from nbmemory.tokens import context_window; "
        "print(context_window('gpt-4o'), 'litellm' in sys.modules)"
    )
    assert run_python(code).stdout.split() == ["128000", "False"]


def test_loading_an_encoding_leaves_no_variable_behind(monkeypatch):
    for key in ("TIKTOKEN_CACHE_DIR", "CUSTOM_TIKTOKEN_CACHE_DIR"):
        monkeypatch.delenv(key, raising=False)
    tokens.get_encoding.cache_clear()  # load it for real, not from the cache
    assert TokenCounter("gpt-4").count("x") == 1
    assert "TIKTOKEN_CACHE_DIR" not in os.environ


def test_a_long_text_is_counted_in_pieces_as_the_whole_would_be():
    counter = TokenCounter("gpt-4o")
    prose = "On 2026-04-20 the team spent 40k EUR on ClickHouse, then moved on. " * 2000
    encoding = get_encoding("o200k_base")
    assert counter.count(prose) == len(encoding.encode_ordinary(prose))
    run = "x" * 100_000  # no space to cut before: within a token per piece
    assert abs(counter.count(run) - len(encoding.encode_ordinary(run))) <= 100_000 // 4096 + 1


_PARTS = st.one_of(
    st.sampled_from([" ", "  ", "\n", "\n\n", "\t", ".", "?!", "'s", "'", "-", "/", "(", "12345"]),
    st.text(alphabet="abcXYZéßЖ中ー0123456789\u0301½Ⅻ_", min_size=1, max_size=8),
    st.builds(
        lambda c, n, after: c * n + after,
        st.sampled_from("xXyéЖ中½"),
        st.integers(30, 200),
        st.sampled_from(["", "'s", "'S", "\u0301", ".", "1", "\n", "\r\n", "ñ"]),
    ),
    st.builds(
        lambda a, n: (a * n)[:n], st.sampled_from(["ab", "aB", "Ab", "xyz"]), st.integers(30, 120)
    ),
)
_TEXTS = st.lists(_PARTS, max_size=30).map("".join)


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])
@settings(max_examples=600, deadline=None)
@given(text=_TEXTS)
@example(text="I " + "n" * 40 + "'t know")  # o200k: one piece with its contraction
@example(text="The " + "y" * 42 + "'s end")
def test_texts_with_long_words_count_as_tiktoken_counts_them(model, text):
    """A long word is counted apart (and once per process): the sum is tiktoken's count."""
    counter = TokenCounter(model)
    encoding = get_encoding(counter.encoding_name)
    assert counter.count(text) == len(encoding.encode_ordinary(text))
    assert counter.count(text) == len(encoding.encode_ordinary(text))


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])
@settings(max_examples=600, deadline=None)
@given(text=_TEXTS, end=st.sampled_from(["\n\n", "\n", " ", "\t\n", " \n\n"]))
def test_a_text_and_the_same_text_with_a_blank_line_after_it_are_both_exact(model, text, end):
    counter = TokenCounter(model)
    encoding = get_encoding(counter.encoding_name)
    exact = (len(encoding.encode_ordinary(text)), len(encoding.encode_ordinary(text + end)))
    assert counter.count_ending(text, end) == exact


def test_a_10_mib_run_without_spaces_is_estimated_within_two_percent():
    """tiktoken's time grows faster than the length of such a run: beyond 32 KiB it is
    estimated from three samples; what is around it is still counted exactly."""
    counter = TokenCounter("gpt-4")
    encoding = get_encoding("cl100k_base")
    run = base64.b64encode(random.Random(7).randbytes(15 << 19)).decode()  # 10 MiB
    assert len(run) == 10 << 20
    exact = len(encoding.encode_ordinary(run))
    around = "An attachment follows. "
    counted = counter.count(around + run + " " + around)
    assert abs(counted - exact - 2 * len(encoding.encode_ordinary(around))) <= exact * 0.02
    short = run[:32768]  # no longer than that: counted in pieces, within a token a piece
    assert abs(counter.count(short) - len(encoding.encode_ordinary(short))) <= 32768 // 4096


@pytest.mark.parametrize("tail", [False, True])
def test_fit_keeps_the_longest_start_or_end_within_a_budget(tail):
    counter = TokenCounter("gpt-4o")
    text = "The launch is on 2027-03-14 and the budget is 40k EUR. " * 20
    kept = counter.fit(text, 25, tail=tail)
    assert counter.count(kept) <= 25
    assert text.endswith(kept) if tail else text.startswith(kept)
    longer = text[len(text) - len(kept) - 1 :] if tail else text[: len(kept) + 1]
    assert counter.count(longer) > 25
    assert counter.fit(text, 0) == "" and counter.fit("short", 100) == "short"


VARIED = [
    "hello world",
    "Grüße aus Köln — 漢字かな交じり文, emoji 🚀🧪 and zero-width\u200bjoiners",
    "def f(x):\n\treturn {'a': [x, x ** 2]}  # comment\n\n\n    indented\r\n",
    "<|endoftext|> <|fim_prefix|> special tokens as text",
    "x" * 20_000,
    " " * 5000 + "\n" * 500,
    "0123456789" * 700,
    "".join(chr(c) for c in range(32, 0x3000, 7)),
]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "p50k_base"])
def test_the_fast_reader_builds_the_encoding_tiktoken_builds(name, monkeypatch):
    import tiktoken
    from tiktoken_ext import openai_public

    ours = get_encoding(name)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tokens.encoding_file(name).parent))
    theirs = tiktoken.Encoding(**openai_public.ENCODING_CONSTRUCTORS[name]())
    assert ours._mergeable_ranks == theirs._mergeable_ranks
    assert ours._special_tokens == theirs._special_tokens
    assert (ours.name, ours._pat_str, ours.n_vocab) == (
        theirs.name,
        theirs._pat_str,
        theirs.n_vocab,
    )
    for text in VARIED:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
        assert ours.encode(text, disallowed_special=()) == theirs.encode(
            text, disallowed_special=()
        )


def test_a_damaged_encoding_file_is_refused(tmp_path, monkeypatch):
    source = tokens.encoding_file("cl100k_base")
    damaged = tmp_path / "litellm_core_utils" / "tokenizers" / source.name
    damaged.parent.mkdir(parents=True)
    data = bytearray(source.read_bytes())
    data[100] ^= 1  # one bit
    damaged.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="sha256"):
        tokens.read_ranks(damaged, "0" * 64)
    monkeypatch.setattr(tokens, "_litellm_dir", lambda: tmp_path)
    tokens.encoding_file.cache_clear()
    tokens.get_encoding.cache_clear()
    try:
        with pytest.warns(UserWarning, match="damaged"):
            assert get_encoding("cl100k_base") is None
    finally:
        tokens.encoding_file.cache_clear()
        tokens.get_encoding.cache_clear()


def test_knowing_the_encoding_loads_no_tokenizer():
    code = (
        "import sys; from nbmemory.tokens import TokenCounter; "
        "print(TokenCounter('gpt-4o').encoding_name, 'tiktoken' in sys.modules)"
    )
    assert run_python(code).stdout.split() == ["o200k_base", "False"]


def test_a_window_is_read_from_the_map_entry_alone_as_the_whole_map_gives_it():
    table = tokens._model_map()
    for key in ("gpt-4o", "claude-sonnet-4-5", "ollama/llama3", "gpt-4o-mini"):
        assert tokens._model_entry(key) == table[key]
    assert tokens._model_entry("no-such-model") is None
