import re

from support import ROOT


def test_the_readme_examples_run(capsys):
    """Every ```python block runs as it is (```py marks one that needs a team's database)."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)
    assert len(blocks) >= 2
    for number, block in enumerate(blocks):
        exec(compile(block, f"<README example {number}>", "exec"), {})
    assert "search_knowledge_base returned: Grid batteries now cover 4-hour peaks." in (
        capsys.readouterr().out
    )
