"""Token-level pre-normalisation of predicate text before sqlglot parses it (conflict-rules §8.1).

Catalyst `simpleString` (what delta-spark >= 2.4 records for DELETE/UPDATE/MERGE) is almost
SQL, with three differences this module irons out token by token, never with a regex over the
whole predicate:

* attribute references carry an expression id and a type suffix (`id#480L`): we turn each into
  one quoted identifier (`` `id#480L` ``) so sqlglot keeps it whole; parse.py then splits the
  id off and keeps it (MERGE needs it to tell the two `id` attributes apart);
* literals are printed unquoted (`(part#12 = 2024-01-01)`, `(name#3 = foo bar)`,
  `StartsWith(name#1, abc)`): in Catalyst text every attribute carries an id and every binary
  operator is parenthesised, so an operand that is neither an attribute, a number, a keyword
  literal, a call nor a group must be a literal; we quote it;
* long lists may be elided (`... 5 more fields`) or the text cut mid-token: we put a
  placeholder (`__truncated__`) where text is missing, close what was left open, and report it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from forensics.predicates.parsed import TRUNCATION_MARK

# Levels of an expression tree (parse._depth; a chain of one connective is one level) that
# parse.py guarantees to parse: sqlglot recurses ~22 Python frames per level, and parse.py makes
# room for that many however deep its caller's stack is (tests/test_predicates_properties.py
# and tests/test_reliability.py check the boundary). Deeper text is refused with this number.
MAX_DEPTH = 64


class TooDeep(ValueError):
    pass


@dataclass
class Tok:
    kind: str  # ws str bq word attr op arith lp rp comma dot other ellipsis
    text: str
    start: int = 0
    end: int = 0
    unterminated: bool = False


_OPS = ("<=>", "<=", ">=", "<>", "!=", "==", "=", "<", ">")
_ARITH = ("||", "+", "-", "*", "/", "%", "&", "|", "^", "~")
_CMP_WORDS = {"like", "rlike", "ilike", "regexp"}
_CONNECTIVES = {"and", "or"}
_KEYWORD_LITERALS = {"true", "false", "null"}
# Words that make an operand an expression we leave alone (no literal quoting).
_EXPR_WORDS = {"case", "when", "then", "else", "end", "interval", "array", "map", "struct", "exists", "select"}
_VALUE_KINDS = {"str", "bq", "word", "attr"}


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_$"


def tokenize(text: str, quotes: bool = True) -> list[Tok]:
    """Split into tokens; with quotes=False, ' and " are plain characters (Catalyst prints
    string literals raw, so `O'Brien` must not open a string)."""
    toks: list[Tok] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        start = i
        if ch.isspace():
            while i < n and text[i].isspace():
                i += 1
            toks.append(Tok("ws", text[start:i], start, i))
        elif quotes and ch in ("'", '"'):
            i += 1
            closed = False
            while i < n:
                c = text[i]
                if c == "\\":
                    i += 2
                    continue
                if c == ch:
                    i += 1
                    closed = True
                    break
                i += 1
            i = min(i, n)
            toks.append(Tok("str", text[start:i], start, i, unterminated=not closed))
        elif ch == "`":
            i += 1
            closed = False
            while i < n:
                if text[i] == "`":
                    if i + 1 < n and text[i + 1] == "`":
                        i += 2
                        continue
                    i += 1
                    closed = True
                    break
                i += 1
            toks.append(Tok("bq", text[start:i], start, i, unterminated=not closed))
        elif _is_word_char(ch):
            while i < n and _is_word_char(text[i]):
                i += 1
            word = text[start:i]
            if word.isdigit():
                # number: fraction, exponent, type suffix (1.50, 1e3, 1.5BD)
                if i + 1 < n and text[i] == "." and text[i + 1].isdigit():
                    i += 1
                    while i < n and text[i].isdigit():
                        i += 1
                if i + 1 < n and text[i] in "eE" and (text[i + 1].isdigit() or (text[i + 1] in "+-" and i + 2 < n and text[i + 2].isdigit())):
                    i += 2
                    while i < n and text[i].isdigit():
                        i += 1
                while i < n and _is_word_char(text[i]):
                    i += 1
                toks.append(Tok("word", text[start:i], start, i))
            elif i + 1 < n and text[i] == "#" and text[i + 1].isdigit():
                i += 1
                while i < n and text[i].isdigit():
                    i += 1
                if i < n and text[i] == "L" and not (i + 1 < n and _is_word_char(text[i + 1])):
                    i += 1
                toks.append(Tok("attr", text[start:i], start, i))
            else:
                toks.append(Tok("word", word, start, i))
        elif text.startswith("...", i):
            while i < n and text[i] == ".":
                i += 1
            toks.append(Tok("ellipsis", text[start:i], start, i))
        elif ch == "(":
            i += 1
            toks.append(Tok("lp", ch, start, i))
        elif ch == ")":
            i += 1
            toks.append(Tok("rp", ch, start, i))
            # A Python UDF prints its result id after its arguments (`gate(id#202)#205`, Spark's
            # PythonUDF.toString, seen in delta-spark 4.4's DELETE/UPDATE predicates): it names no
            # column, so it is dropped and the call parses like any other function.
            if i + 1 < n and text[i] == "#" and text[i + 1].isdigit():
                i += 1
                while i < n and text[i].isdigit():
                    i += 1
                if i < n and text[i] == "L" and not (i + 1 < n and _is_word_char(text[i + 1])):
                    i += 1
        elif ch == ",":
            i += 1
            toks.append(Tok("comma", ch, start, i))
        elif ch == ".":
            i += 1
            toks.append(Tok("dot", ch, start, i))
        else:
            for op in _OPS:
                if text.startswith(op, i):
                    i += len(op)
                    toks.append(Tok("op", op, start, i))
                    break
            else:
                for op in _ARITH:
                    if text.startswith(op, i):
                        i += len(op)
                        toks.append(Tok("arith", op, start, i))
                        break
                else:
                    i += 1
                    toks.append(Tok("other", ch, start, i))
    return toks


def _mark() -> Tok:
    return Tok("word", TRUNCATION_MARK)


def replace_elisions(toks: list[Tok]) -> tuple[list[Tok], bool]:
    """`... 5 more fields` (Spark truncatedString) and bare `...` become the placeholder."""
    out: list[Tok] = []
    found = False
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "ellipsis":
            found = True
            j = i + 1
            words = []
            k = j
            while k < len(toks) and len(words) < 3:
                if toks[k].kind == "ws":
                    k += 1
                    continue
                if toks[k].kind == "word":
                    words.append(toks[k].text.lower())
                    k += 1
                    continue
                break
            if len(words) == 3 and words[0].isdigit() and words[1] == "more" and words[2] in ("fields", "field"):
                i = k
            else:
                i += 1
            out.append(_mark())
            continue
        out.append(t)
        i += 1
    return out, found


@dataclass
class Group:
    open: Tok | None
    items: list = field(default_factory=list)
    close: Tok | None = None


def group(toks: list[Tok]) -> tuple[Group, bool, bool]:
    """Nest tokens by parentheses. Returns (root, unclosed, stray_close)."""
    root = Group(None)
    stack = [root]
    stray = False
    for t in toks:
        if t.kind == "lp":
            g = Group(t)
            stack[-1].items.append(g)
            stack.append(g)
            if len(stack) - 1 > MAX_DEPTH:  # the root is no group; each group is at least one level
                raise TooDeep(f"nesting deeper than {MAX_DEPTH}")
        elif t.kind == "rp":
            if len(stack) > 1:
                stack[-1].close = t
                stack.pop()
            else:
                stray = True
                stack[-1].items.append(t)
        else:
            stack[-1].items.append(t)
    return root, len(stack) > 1, stray


# ---- Catalyst literal quoting ------------------------------------------------------------


def quote_literal(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _is_number(word: str) -> bool:
    s = word
    for suf in ("BD", "bd", "L", "l", "S", "s", "Y", "y", "D", "d", "F", "f"):
        if s.endswith(suf) and len(s) > len(suf):
            s = s[: -len(suf)]
            break
    try:
        float(s)
    except ValueError:
        return False
    return s[:1].isdigit() and "_" not in s


def _sig(items: list) -> list[int]:
    return [i for i, it in enumerate(items) if not (isinstance(it, Tok) and it.kind == "ws")]


def _word(it, *words: str) -> bool:
    return isinstance(it, Tok) and it.kind == "word" and it.text.lower() in words


class _Quoter:
    def __init__(self, source: str):
        self.source = source

    def _literal_from(self, toks: list[Tok]) -> Tok:
        if all(t.end > t.start for t in toks):
            raw = self.source[toks[0].start : toks[-1].end]
        else:
            raw = "".join(t.text for t in toks)
        return Tok("str", quote_literal(raw))

    def seg(self, items: list) -> list:
        """A sequence at one nesting level: connectives, then one comparison, else an operand."""
        sig = _sig(items)
        for idx in sig:
            if _word(items[idx], *_CONNECTIVES):
                left, right = items[:idx], items[idx + 1 :]
                return self.seg(left) + [items[idx]] + self.seg(right)
        for idx in sig:
            it = items[idx]
            if (isinstance(it, Tok) and it.kind == "op") or _word(it, *_CMP_WORDS):
                # Catalyst parenthesises every binary operator: the right operand runs to the
                # end of the group, whatever it contains (an unquoted literal may hold `=`).
                left, right = self.operand(items[:idx]), self.operand(items[idx + 1 :])
                # Catalyst prints the empty string literal as nothing: `(name#1 = )`
                if not _sig(left):
                    left = left + [Tok("str", "''")]
                if not _sig(right):
                    right = [Tok("ws", " "), Tok("str", "''")] + right
                return left + [it] + right
        for pos, idx in enumerate(sig):
            it = items[idx]
            if isinstance(it, Tok) and it.kind == "arith" and 0 < idx < len(items) - 1:
                before, after = items[idx - 1], items[idx + 1]
                if _is_ws(before) and _is_ws(after):
                    return self.operand(items[:idx]) + [it] + self.seg(items[idx + 1 :])
        return self.operand(items)

    def args(self, g: Group) -> None:
        parts: list[list] = [[]]
        for it in g.items:
            if isinstance(it, Tok) and it.kind == "comma":
                parts.append([])
            else:
                parts[-1].append(it)
        out: list = []
        for k, part in enumerate(parts):
            if k:
                out.append(Tok("comma", ","))
            if not _sig(part) and len(parts) > 1:
                out.append(Tok("str", "''"))  # an empty string literal in a list
                continue
            out += self.seg(part)
        g.items = out

    def operand(self, items: list) -> list:
        sig = _sig(items)
        if not sig:
            return items
        lo, hi = sig[0], sig[-1] + 1
        head, core, tail = items[:lo], items[lo:hi], items[hi:]
        csig = _sig(core)
        first = core[csig[0]]
        if _word(first, "not"):
            return head + [first] + self.seg(core[csig[0] + 1 :]) + tail
        for idx in csig:
            it = core[idx]
            if _word(it, "in"):
                nxt = [core[j] for j in csig if j > idx]
                left = self.operand(core[:idx])
                if nxt and isinstance(nxt[0], Group):
                    self.args(nxt[0])
                return head + left + core[idx:] + tail
            if _word(it, "inset"):
                left = self.operand(core[:idx])
                rest = core[idx + 1 :]
                if len(_sig(rest)) == 1 and isinstance(rest[_sig(rest)[0]], Group):
                    g = rest[_sig(rest)[0]]
                else:
                    g = Group(Tok("lp", "("), list(rest), Tok("rp", ")"))
                self.args(g)
                return head + left + [Tok("ws", " "), Tok("word", "IN"), Tok("ws", " "), g] + tail
        # trailing IS [NOT] NULL
        if len(csig) >= 3 and _word(core[csig[-1]], "null"):
            k = -2
            if _word(core[csig[k]], "not"):
                k = -3
            if len(csig) >= -k + 1 and _word(core[csig[k]], "is"):
                cut = csig[k]
                return head + self.operand(core[:cut]) + core[cut:] + tail
        if len(csig) == 1 and isinstance(first, Group):
            first.items = self.seg(first.items)
            return items
        if len(csig) == 2 and isinstance(first, Tok) and first.kind in ("word", "bq") and isinstance(core[csig[1]], Group) and csig[1] == csig[0] + 1:
            g = core[csig[1]]
            name = first.text.lower()
            if name in ("cast", "try_cast"):
                gs = _sig(g.items)
                for j in gs:
                    if _word(g.items[j], "as"):
                        g.items = self.operand(g.items[:j]) + g.items[j:]
                        break
            else:
                self.args(g)
            return items
        toks = [core[i] for i in csig]
        expressionish = any(
            isinstance(t, Group)
            or t.kind in ("attr", "dot", "bq")
            or (t.kind == "word" and t.text.lower() in _EXPR_WORDS)
            for t in toks
        )
        if expressionish:
            for t in toks:
                if isinstance(t, Group):
                    t.items = self.seg(t.items)
            return items
        if len(toks) == 1:
            t = toks[0]
            if t.kind == "str" or (t.kind == "word" and (_is_number(t.text) or t.text.lower() in _KEYWORD_LITERALS or t.text == TRUNCATION_MARK)):
                return items
            if t.kind == "word":
                return head + [self._literal_from(toks)] + tail
            return items
        if len(toks) == 2 and toks[0].kind == "arith" and toks[0].text in "+-" and toks[1].kind == "word" and _is_number(toks[1].text):
            return items
        if any(t.text == TRUNCATION_MARK for t in toks):
            # a literal cut off mid-way: the whole operand is unknown
            return head + [_mark()] + tail
        if any(t.kind == "str" for t in toks):
            return items
        return head + [self._literal_from(core[csig[0] : csig[-1] + 1])] + tail


def _is_ws(it) -> bool:
    return isinstance(it, Tok) and it.kind == "ws"


def quote_catalyst_literals(root: Group, source: str) -> None:
    root.items = _Quoter(source).seg(root.items)


# ---- emission -------------------------------------------------------------------------------


def _attr_text(t: Tok) -> str:
    return "`" + t.text.replace("`", "``") + "`"


def emit(g: Group) -> str:
    """Text for sqlglot; iterative so deep-but-allowed nesting never recurses in Python."""
    out: list[str] = []
    stack: list = [(g, 0)]
    while stack:
        grp, pos = stack.pop()
        if pos == 0 and grp.open is not None:
            out.append("(")
        if pos < len(grp.items):
            it = grp.items[pos]
            stack.append((grp, pos + 1))
            if isinstance(it, Group):
                stack.append((it, 0))
            elif it.kind == "attr":
                out.append(_attr_text(it))
            else:
                out.append(it.text)
            continue
        if grp.open is not None:
            out.append(")")
    return "".join(out)


def repair_cut(toks: list[Tok], drop: int = 0) -> list[Tok]:
    """Text cut off mid-way: drop `drop` trailing tokens, put the placeholder where the cut is."""
    sig = [i for i, t in enumerate(toks) if t.kind != "ws"]
    if drop:
        if drop >= len(sig):
            return [_mark()]
        toks = toks[: sig[-drop]]
        sig = [i for i, t in enumerate(toks) if t.kind != "ws"]
    if not sig:
        return [_mark()]
    last = toks[sig[-1]]
    if last.kind in _VALUE_KINDS and not (last.kind == "word" and last.text.lower() in ("and", "or", "not", "in", "is", "like", "between", "as")):
        # the last value may itself be cut (`50` printed as `5`): do not trust it
        return toks[: sig[-1]] + [_mark()]
    if last.kind in ("rp", "other", "dot"):
        return toks
    return toks + [Tok("ws", " "), _mark()]
