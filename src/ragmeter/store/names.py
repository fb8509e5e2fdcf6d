"""What a name may be: the one check for the names of datasets, knowledge spaces, apps,
prompts, runs, tags and documents (and of users).

A name is kept in Unicode NFKC form, so that ``golden`` typed in fullwidth letters is
stored, found and compared as ``golden``. It may hold no invisible or formatting character
(Unicode categories Cc, Cf, Co, Cs, Cn, Zl, Zp: bidi overrides and isolates, zero-width
characters, byte order marks), which would make it read differently from what it is. And
no word of it may mix scripts (``golden`` with a Cyrillic o), except Latin with Han, Kana,
Hangul or Bopomofo, as Chinese, Japanese and Korean names are written (Unicode TS 39,
"highly restrictive"). A name written wholly in another script that looks like a Latin one
(Cyrillic letters that spell ``cop``) is not caught: that would refuse ordinary names in
those scripts. Documents' file names are normalised and checked for invisible characters
only: a file keeps the name it has on its owner's disk.
"""

from __future__ import annotations

import re
import unicodedata

from ragmeter.errors import ConfigError

__all__ = ["check_name", "key_text", "normal_text", "single_script"]

#: categories a name may not hold: controls, formats (bidi, zero-width), private use,
#: surrogates, unassigned code points, line and paragraph separators
_HIDDEN = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
#: scripts that may share a word (besides Common and Inherited, which any may hold)
_TOGETHER = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
)
_NEUTRAL = frozenset({"COMMON", "INHERITED"})
_NAME = re.compile(r"[\w][\w.\- ]{0,199}")


def key_text(key: str | int) -> str:
    """The text a name (or an id) is looked up by: NFKC, as names are stored, and stripped."""
    return unicodedata.normalize("NFKC", str(key)).strip()


def normal_text(text: str, field: str) -> str:
    """``text`` in NFKC form; ConfigError naming ``field`` when it holds an invisible or
    formatting character (which one, and where)."""
    normal = unicodedata.normalize("NFKC", text)
    for position, char in enumerate(normal):
        if unicodedata.category(char) in _HIDDEN:
            raise ConfigError(
                f"{field}: holds the invisible or formatting character U+{ord(char):04X} "
                f"({unicodedata.name(char, 'unnamed')}) at position {position}; names may "
                "hold no control, bidi or zero-width characters"
            )
    return normal


def single_script(text: str, field: str) -> None:
    """ConfigError naming ``field`` when a word of ``text`` mixes scripts that are not written
    together (a confusable name such as ``golden`` with a Cyrillic o)."""
    from confusable_homoglyphs import categories

    for word in text.split():
        scripts = {categories.alias(char) for char in word} - _NEUTRAL
        if len(scripts) > 1 and not any(scripts <= allowed for allowed in _TOGETHER):
            raise ConfigError(
                f"{field}: '{word}' mixes the {', '.join(sorted(s.title() for s in scripts))} "
                "scripts, which can make it look like another name; write each word in one "
                "script"
            )


def check_name(name: str, what: str) -> str:
    """``name`` in the form it is stored, compared and found in (NFKC); ConfigError unless it
    is 1-200 letters, digits, ``_ - .`` or spaces, starts with a letter or digit, is not all
    digits (those are ids), holds no invisible character and mixes no scripts in a word."""
    field = f"{what} name"
    normal = normal_text(name, field)
    if not _NAME.fullmatch(normal) or normal.isdigit() or normal != normal.strip():
        raise ConfigError(
            f"invalid {what} name {name!r}: use letters, digits, '_', '-', '.' or spaces "
            "(at most 200), not only digits (those are ids)"
        )
    single_script(normal, field)
    return normal
