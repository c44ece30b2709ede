from nbmemory import Conversation
from nbmemory.memory import block_counts, token_counts
from nbmemory.memory.block_counts import KEEP_EVERY
from nbmemory.store import memory_path
from support import agent_docs


def keeper() -> Conversation:
    """Agent Keeper's conversation with one message written, its counts kept at close."""
    convo = Conversation(
        name="Keeper", memory_md_path=memory_path("Keeper"), tokenizer_model_name="gpt-4o"
    )
    convo.add("User", "Our budget is 40k EUR; the launch is on 2027-03-14.")
    convo.context_tokens()
    convo.close()
    return convo


def test_kept_counts_cover_every_block_of_a_long_memory_and_are_kept_every_few(on_store):
    convo = keeper()
    for i in range(200):
        convo.add("User", f"message {i}")
        convo.context_tokens()  # as an agent's loop asks
    kept = token_counts.read_counts(agent_docs("Keeper"), "o200k_base")
    assert len(kept) >= 200 - KEEP_EVERY  # kept at most KEEP_EVERY blocks ago


def test_the_counts_of_a_long_memory_are_kept_every_eighth_of_it(on_store, monkeypatch):
    """Each write of the kept counts costs the memory's size: the longer the memory, the
    rarer they are, so that keeping them costs a constant time per message."""
    convo = keeper()
    for i in range(4000):
        convo.add("User", f"message {i}")
    convo.context_tokens()
    sizes = []
    real_write = block_counts.write_counts
    monkeypatch.setattr(
        block_counts,
        "write_counts",
        lambda docs, encoding, counts: (
            sizes.append(len(counts)) or real_write(docs, encoding, counts)
        ),
    )
    for i in range(600):
        convo.add("User", f"more {i}")
        convo.context_tokens()
    assert len(sizes) == 1  # 4,000 + 512 blocks counted; every 64 were 9 writes
    kept = token_counts.read_counts(agent_docs("Keeper"), "o200k_base")
    assert len(kept) >= (4601 + 2) * 7 // 8
