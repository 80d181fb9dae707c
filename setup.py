"""Which packages the distribution carries; everything else is in pyproject.toml.

The prompt templates live in the top-level `prompts/` (people edit them there)
and are installed inside the package as `csro_tui/_prompts`, where an installed
copy finds them (`csro_tui.oracles.llm.prompts.BUILTIN_PROMPTS_DIR`).  Mapping a
package to that folder is the plain setuptools way to ship it in wheels and
sdists (package data travels with its package) without copying files; it needs
`find_namespace_packages` plus two names, which pyproject.toml's `find` table
cannot add, hence this file.  An editable install or a checkout reads
`prompts/` itself.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=find_namespace_packages(include=["csro_tui*"]) + ["csro_tui._prompts", "csro_tui._prompts.examples"],
    package_dir={"csro_tui._prompts": "prompts"},
)
