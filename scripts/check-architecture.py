#!/usr/bin/env python3
"""Architecture checks for the crate's `src/` (and `tests/`, for sizes): file cycles, file sizes,
visibility.

Usage:
    scripts/check-architecture.py [--root DIR] [--report] [--edges]
                                  [--max-lines N] [--min-private-share F]
    scripts/check-architecture.py --self-test

Three checks, one summary line each; exit 1 when one fails (never with --report, which prints
every detail and exits 0). --report also prints the rooms (each top-level module of `src/`:
files, private share, arrows to other rooms), every path written in one room that enters
another below its front door (`crate::kb::bundle::X` from outside kb, rather than
`crate::kb::X`), and how many files of `src/` and `tests/` are over 400 and over 500 lines:

1. No cycle between files. The graph has one node per file of the library's module tree, read
   from `src/lib.rs` through its `mod` declarations (`src/bin/` is not part of it). File A
   depends on file B when A names an item *defined* in B: through a `use` (`crate::`, `super::`,
   `self::`, a child module's name, grouped `{..}` trees, `as` renames, globs), or through an
   inline path such as `crate::otlp::flush()` or `super::x::Y`. A path is followed through every
   `use` of the modules on its way (re-exports in `mod.rs` included), so `crate::rag::Caller`
   names `src/rag/caller.rs`, where `Caller` is defined, not `src/rag/mod.rs`. `Type::item`
   names the file defining `Type`. A `mod child;` is containment, not a dependency, and naming a
   module alone depends on nothing. A `pub`/`pub(..)` `use` is a re-export: it makes its file
   depend on the item only when that file's own code also names it (so `pub use child::X` in a
   `mod.rs` is no edge by itself); a private `use` always does (rustc refuses an unused one).
   Ignored: `#[cfg(test)]` items (and `#[cfg(all(test, ..))]`), so `mod tests { .. }` blocks
   and test-only files (`*_tests.rs`, fixtures) declared under `#[cfg(test)]`; comments and
   string literals; paths into other crates (`std::`, `tokio::`, ...). `#[path]` is honoured.
   Each strongly connected component of more than one file is printed with the edges inside
   it, each with the first source line that creates it.
   Not seen: a trait brought in only by a re-export and used only through method calls.
2. No file over --max-lines (default 500) lines: every `src/**/*.rs` (binaries and test-only
   files too) and every `tests/**/*.rs` (the integration tests and their `tests/support/`).
3. Most items crate-private. Counted: every *item* of the library (not `src/bin/`) that is
   written with a visibility, outside `#[cfg(test)]` code and outside function bodies: each
   module-level fn, struct, enum, union, trait, type, const, static and mod; each name a `use`
   brings in (a re-export; a glob counts once); each fn, const and type of an inherent `impl`
   block (methods; trait impls carry no visibility). `pub` counts as public; `pub(crate)`,
   `pub(super)`, `pub(self)` and `pub(in ..)` as crate-private; items without a visibility
   (private) are not counted. The visibility is read as written: a `pub` item inside a private
   module still counts as `pub`. Struct and union fields (named or tuple) are not items: they
   are counted and printed apart, outside the share. The share is crate-private / (public +
   crate-private); the check fails below --min-private-share (default 0.60).
"""

import argparse
import os
import re
import sys
import tempfile
import unittest

# ----------------------------------------------------------------------------------------------
# Lexing: identifiers, punctuation and string literals (value kept for `#[path = ".."]`), with
# comments, whitespace, numbers, chars and lifetimes dropped. Each token is (kind, text, line).

_TOKEN = re.compile(
    r"""(?P<ws>\s+)
      | (?P<line_comment>//[^\n]*)
      | (?P<block_comment>/\*)
      | (?P<raw_string>[bc]?r(?P<hashes>\#*)"(?P<raw_body>.*?)"(?P=hashes))
      | (?P<string>[bc]?"(?P<body>(?:[^"\\]|\\.)*)")
      | (?P<char>b?'(?:[^'\\\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]*\}|.))')
      | (?P<lifetime>'[A-Za-z_]\w*)
      | (?P<ident>(?:r\#)?[A-Za-z_]\w*)
      | (?P<number>\d\w*)
      | (?P<path_sep>::)
      | (?P<punct>.)""",
    re.VERBOSE | re.DOTALL,
)


def lex(text):
    """The tokens of a Rust source text: list of (kind, text, line), kind 'id', 'str' or 'p'."""
    tokens, pos, line, end = [], 0, 1, len(text)
    while pos < end:
        m = _TOKEN.match(text, pos)
        kind = m.lastgroup
        if kind == "block_comment":
            depth, i = 1, pos + 2
            while depth and i < end:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            line += text.count("\n", pos, i)
            pos = i
            continue
        value = m.group(0)
        if kind == "ident":
            tokens.append(("id", value[2:] if value.startswith("r#") else value, line))
        elif kind in ("string", "raw_string"):
            body = m.group("body") if kind == "string" else m.group("raw_body")
            tokens.append(("str", body, line))
        elif kind in ("path_sep", "punct"):
            tokens.append(("p", value, line))
        line += value.count("\n")
        pos = m.end()
    return tokens


def closing(tokens, i):
    """Index of the bracket closing the one at `i`."""
    depth = 0
    for j in range(i, len(tokens)):
        text = tokens[j][1] if tokens[j][0] == "p" else ""
        if text in "([{" and text:
            depth += 1
        elif text in ")]}" and text:
            depth -= 1
            if depth == 0:
                return j
    return len(tokens) - 1


def item_end(tokens, i):
    """Index of the last token of the item starting at `i`: its `;` or its body's `}`."""
    j = i
    while j < len(tokens):
        kind, text, _ = tokens[j]
        if kind == "p" and text in "([":
            j = closing(tokens, j) + 1
            continue
        if kind == "p" and text == ";":
            return j
        if kind == "p" and text == "{":
            return closing(tokens, j)
        j += 1
    return len(tokens) - 1


# ----------------------------------------------------------------------------------------------
# The module tree: each module knows its file, children, items and `use` names.


class Use:
    """One name brought in by a `use`: `alias` (or '*') for the path `segments`."""

    def __init__(self, segments, alias, line, public, module):
        self.segments, self.alias, self.line = segments, alias, line
        self.public, self.module = public, module


class Module:
    def __init__(self, name, parent, file, child_dir):
        self.name, self.parent, self.file, self.child_dir = name, parent, file, child_dir
        self.children = {}  # name -> Module
        self.items = {}  # name -> kind ('fn', 'struct', ...)
        self.uses = {}  # alias -> Use, module-level
        self.globs = []  # [Use], module-level `use x::*`
        self.local_uses = {}  # alias -> Use, inside function bodies (this module's code only)
        self.local_globs = []

    def path(self):
        names, m = [], self
        while m.parent is not None:
            names.append(m.name)
            m = m.parent
        return "crate" + "".join("::" + n for n in reversed(names))


ITEM_KINDS = {"fn", "struct", "enum", "union", "trait", "type", "const", "static"}
QUALIFIERS = {"async", "unsafe", "default", "auto"}


def parse_use_tree(tokens, i, prefix, out):
    """Parse the use tree at `i` under `prefix`, appending (segments, alias, line); returns the
    index after it."""
    segments = list(prefix)
    while i < len(tokens):
        kind, text, line = tokens[i]
        if kind == "p" and text == "{":
            end = closing(tokens, i)
            j = i + 1
            while j < end:
                j = parse_use_tree(tokens, j, segments, out)
                if tokens[j][1] == ",":
                    j += 1
            return end + 1
        if kind == "p" and text == "*":
            out.append((tuple(segments), "*", line))
            return i + 1
        if kind == "p" and text == "::":
            if not segments:
                segments.append("::")  # a global path: another crate
            i += 1
            continue
        if kind != "id":
            return i
        if text == "self" and segments:
            alias = segments[-1]
        else:
            segments.append(text)
            alias = text
        i += 1
        if i < len(tokens) and tokens[i][1] == "as":
            alias = tokens[i + 1][1]
            i += 2
        if i >= len(tokens) or tokens[i][1] != "::":
            out.append((tuple(segments), alias, line))
            return i


def is_test_attr(attr):
    """Whether the attribute tokens say `cfg(test)` or `cfg(all(test, ..))`."""
    texts = [t[1] for t in attr]
    if texts[:2] != ["cfg", "("]:
        return False
    if texts[2:4] == ["test", ")"]:
        return True
    return texts[2:4] == ["all", "("] and "test" in texts[4:]


def is_trait_impl(header):
    """Whether an `impl` header (tokens up to its `{`) is `impl Trait for Type`: a `for` outside
    angle brackets that is not a `for<'a>` bound."""
    depth = 0
    for k, (_, text, _) in enumerate(header):
        if text == "<":
            depth += 1
        elif text == ">" and not (k and header[k - 1][1] == "-"):
            depth -= 1
        elif text == "where":
            return False
        elif text == "for" and depth == 0:
            if k + 1 >= len(header) or header[k + 1][1] != "<":
                return True
    return False


class FileInfo:
    def __init__(self, path, tokens):
        self.path, self.tokens = path, tokens
        self.owner = [None] * len(tokens)  # module whose code a token is, None when test-only
        self.module_use = [False] * len(tokens)  # token belongs to a module-level `use`
        self.vis = {"pub": {}, "private": {}}  # counted kind -> count


class Tree:
    """The crate's module tree read from `src/lib.rs`, with every file's tokens."""

    def __init__(self, src):
        self.src = src
        self.files = {}  # relative path -> FileInfo
        self.test_files = []  # files declared only under #[cfg(test)]
        self.root = self._load(os.path.join(src, "lib.rs"), "crate", None, src)

    def rel(self, path):
        return os.path.relpath(path, os.path.dirname(self.src)).replace(os.sep, "/")

    def _load(self, path, name, parent, child_dir):
        with open(path, encoding="utf-8") as f:
            info = FileInfo(self.rel(path), lex(f.read()))
        self.files[info.path] = info
        module = Module(name, parent, info.path, child_dir)
        self._parse_body(info, 0, len(info.tokens), module)
        return module

    def _child_file(self, module, name, path_attr, here):
        if path_attr is not None:
            return os.path.join(os.path.dirname(here), path_attr)
        flat = os.path.join(module.child_dir, name + ".rs")
        return flat if os.path.exists(flat) else os.path.join(module.child_dir, name, "mod.rs")

    def _count(self, info, kind, vis):
        table = info.vis["pub" if vis == "pub" else "private"]
        table[kind] = table.get(kind, 0) + 1

    def _count_inner(self, info, open_index, kind):
        """Count the visibilities written at the first level inside the bracket at `open_index`
        (struct fields, inherent impl items)."""
        end, j = closing(info.tokens, open_index), open_index + 1
        while j < end:
            t = info.tokens[j]
            if t[0] == "p" and t[1] in "([{":
                j = closing(info.tokens, j) + 1
                continue
            if t == ("id", "pub", t[2]):
                has_scope = j + 1 < end and info.tokens[j + 1][1] == "("
                self._count(info, kind, "restricted" if has_scope else "pub")
            j += 1

    def _parse_body(self, info, i, end, module):
        tokens, here = info.tokens, os.path.join(os.path.dirname(self.src), info.path)
        while i < end:
            start, attrs = i, []
            while tokens[i][1] == "#" and i + 1 < end:
                bracket = i + 2 if tokens[i + 1][1] == "!" else i + 1
                attrs.append(tokens[bracket + 1 : closing(tokens, bracket)])
                i = closing(tokens, bracket) + 1
            if i >= end:
                break
            test_only = any(is_test_attr(a) for a in attrs)
            path_attr = next(
                (a[2][1] for a in attrs if len(a) == 3 and a[0][1] == "path" and a[2][0] == "str"),
                None,
            )
            vis = None
            if tokens[i][1] == "pub":
                vis = "pub"
                if tokens[i + 1][1] == "(":
                    vis, i = "restricted", closing(tokens, i + 1)
                i += 1
            while tokens[i][1] in QUALIFIERS or (
                tokens[i][1] in ("const", "extern") and tokens[i + 1][1] in ("fn", "unsafe", "async")
            ):
                i += 1
            if tokens[i][1] == "extern" and tokens[i + 1][0] == "str":
                i += 2  # extern "C" fn / block
            kind, text, _ = tokens[i]
            last = item_end(tokens, i)
            if kind == "p" and text == "{":  # an extern block's body: its own items
                last = closing(tokens, i)
            if not test_only:
                for j in range(start, last + 1):
                    info.owner[j] = module
            if test_only:
                if text == "mod" and tokens[i + 2][1] == ";":
                    self.test_files.append(
                        self.rel(self._child_file(module, tokens[i + 1][1], path_attr, here))
                    )
            elif text == "mod":
                name = tokens[i + 1][1]
                if vis:
                    self._count(info, "mod", vis)
                if tokens[i + 2][1] == ";":
                    path = self._child_file(module, name, path_attr, here)
                    child_dir = os.path.dirname(path)
                    if os.path.basename(path) != "mod.rs":
                        child_dir = os.path.join(child_dir, os.path.basename(path)[:-3])
                    module.children[name] = self._load(path, name, module, child_dir)
                else:
                    child = Module(name, module, module.file, os.path.join(module.child_dir, name))
                    module.children[name] = child
                    self._parse_body(info, i + 3, closing(tokens, i + 2), child)
            elif text == "use":
                names = []
                parse_use_tree(tokens, i + 1, (), names)
                for segments, alias, line in names:
                    use = Use(segments, alias, line, vis is not None, module)
                    if alias == "*":
                        module.globs.append(use)
                    else:
                        module.uses[alias] = use
                    if vis:
                        self._count(info, "use", vis)
                for j in range(i, last + 1):
                    info.module_use[j] = True
            elif text in ITEM_KINDS:
                name_at = i + 2 if tokens[i + 1][1] == "mut" else i + 1
                module.items.setdefault(tokens[name_at][1], text)
                if vis:
                    self._count(info, text, vis)
                if text in ("struct", "union"):
                    body = next(
                        (j for j in range(name_at + 1, last + 1) if tokens[j][1] in "({;"), last
                    )
                    if tokens[body][1] in "({":
                        self._count_inner(info, body, "field")
            elif text == "macro_rules":
                module.items.setdefault(tokens[i + 2][1], "macro")
            elif text == "impl":
                body = next(j for j in range(i, last + 1) if tokens[j][1] == "{")
                if not is_trait_impl(tokens[i + 1 : body]):
                    self._count_inner(info, body, "method")
            i = last + 1


# ----------------------------------------------------------------------------------------------
# Resolution: which file defines the item a path names.


EXTERN = ("extern", None)  # a path into another crate


class Resolver:
    """Finds the file defining what a path names."""

    def __init__(self, tree):
        self.tree = tree
        self.unresolved = []  # (file, line, path) that name no item of this crate

    def lookup(self, module, name, want_namespace, local, seen):
        """What `name` means in `module`: ('item', file), ('module', Module), EXTERN or None."""
        if name == "self":
            return ("module", module)
        if name == "super":
            return ("module", module.parent) if module.parent else None
        if name == "crate":
            return ("module", self.tree.root)
        found_item = module.items.get(name)
        if found_item and (not want_namespace or found_item not in ("fn", "const", "static")):
            return ("item", module.file)
        if name in module.children:
            return ("module", module.children[name])
        if found_item:
            return ("item", module.file)
        uses = dict(module.uses)
        if local:
            uses.update(module.local_uses)
        if name in uses:
            use = uses[name]
            key = (id(use), name)
            if key in seen:
                return None
            return self.resolve(use.module, use.segments, False, seen | {key})
        for glob in module.globs + (module.local_globs if local else []):
            key = (id(glob), name)
            if key in seen:
                continue
            source = self.resolve(glob.module, glob.segments, False, seen | {key})
            if source and source[0] == "module":
                hit = self.lookup(source[1], name, want_namespace, False, seen | {key})
                if hit:
                    return hit
        return None

    def resolve(self, module, segments, local, seen=frozenset()):
        """Follow `segments` from `module`: ('item', file), ('module', Module), EXTERN (another
        crate, a generic, a local name) or None (a name this crate does not have)."""
        if not segments or segments[0] == "::":
            return EXTERN
        current = ("module", module)
        for index, name in enumerate(segments):
            if current[0] == "item":
                return current  # Type::assoc, Enum::Variant: the type's file
            is_last = index == len(segments) - 1
            current = self.lookup(current[1], name, not is_last, local and index == 0, seen)
            if current is None:
                return EXTERN if index == 0 and name not in ("self", "super", "crate") else None
            if current == EXTERN:
                return EXTERN
        return current


# ----------------------------------------------------------------------------------------------
# The graph and the three checks.


def room_of(path):
    """The room a file of src/ is in: its top-level module (`src/kb/bundle/x.rs` -> `kb`,
    `src/clock.rs` -> `clock`); `src/lib.rs` is in none."""
    parts = path.split("/")[1:]
    if parts == ["lib.rs"]:
        return None
    return parts[0][:-3] if len(parts) == 1 else parts[0]


def walked_modules(resolver, module, segments, local):
    """The modules a path written in `module` passes through, segment by segment (a `use`
    alias that names a module counts as that module; re-exports followed inside a module's own
    `use`s do not)."""
    walked, current = [], ("module", module)
    for index, name in enumerate(segments):
        if current[0] != "module":
            break
        current = resolver.lookup(current[1], name, index < len(segments) - 1,
                                  local and index == 0, frozenset())
        if not current or current == EXTERN:
            break
        if current[0] == "module":
            walked.append(current[1])
    return walked


def module_depth(module):
    depth = 0
    while module.parent is not None:
        depth, module = depth + 1, module.parent
    return depth


def build_graph(tree, past_doors=None):
    """Edges {(from file, to file): (line, path text)}, the first line creating each. With
    `past_doors` (a dict), also records each path that enters another room below its front
    door: {(from file, room): (line, path text)}."""
    resolver, edges = Resolver(tree), {}

    def add(info, target, line, segments, module=None, local=False):
        if target and target[0] == "item" and target[1] != info.path:
            key = (info.path, target[1])
            if key not in edges or line < edges[key][0]:
                edges[key] = (line, "::".join(segments))
            if past_doors is not None and module is not None:
                here = room_of(info.path)
                for m in walked_modules(resolver, module, segments, local):
                    room = room_of(m.file)
                    if room and room != here and module_depth(m) >= 2:
                        door = (info.path, room)
                        if door not in past_doors or line < past_doors[door][0]:
                            past_doors[door] = (line, "::".join(segments))
                        break
        elif target is None:
            resolver.unresolved.append((info.path, line, "::".join(segments)))

    for info in tree.files.values():
        tokens, code_idents, local_uses = info.tokens, set(), []
        i = 0
        while i < len(tokens):  # fn-body `use`s first: inline paths may go through them
            module = info.owner[i]
            if module and not info.module_use[i] and tokens[i] == ("id", "use", tokens[i][2]):
                names = []
                i = parse_use_tree(tokens, i + 1, (), names)
                for segments, alias, line in names:
                    use = Use(segments, alias, line, False, module)
                    local_uses.append(use)
                    if alias == "*":
                        module.local_globs.append(use)
                    else:
                        module.local_uses[alias] = use
                continue
            i += 1
        for i, (kind, text, line) in enumerate(tokens):
            module = info.owner[i]
            if module is None or info.module_use[i] or kind != "id":
                continue
            prev = tokens[i - 1][1] if i else ""
            if prev == ".":
                continue
            code_idents.add((module, text))
            if prev == "::" or i + 2 >= len(tokens) or tokens[i + 1][1] != "::":
                continue
            if tokens[i + 2][0] != "id":
                continue
            segments, j = [text], i + 1
            while j + 1 < len(tokens) and tokens[j][1] == "::" and tokens[j + 1][0] == "id":
                segments.append(tokens[j + 1][1])
                j += 2
            if tokens[j][1] == "!":
                continue  # a macro: resolved by the macro system, not by path
            if segments[0] == "use":
                continue
            add(info, resolver.resolve(module, tuple(segments), local=True), line, segments,
                module, True)
        seen_uses = set()
        for module in {m for m in info.owner if m is not None}:
            for use in list(module.uses.values()) + module.globs + local_uses:
                if use.module is not module or id(use) in seen_uses:
                    continue
                seen_uses.add(id(use))
                if use.alias == "*":
                    for mod, name in code_idents:
                        if mod is module and name not in module.items:
                            source = resolver.resolve(module, use.segments, local=False)
                            if source and source[0] == "module":
                                hit = resolver.lookup(source[1], name, False, False, frozenset())
                                if hit and hit[0] == "item":
                                    add(info, hit, use.line, use.segments + (name,))
                    continue
                if use.public and (module, use.alias) not in code_idents:
                    continue  # a re-export its own file does not use
                add(info, resolver.resolve(module, use.segments, local=False), use.line,
                    use.segments, module, use in local_uses)
    return edges, resolver.unresolved


def strongly_connected(nodes, edges):
    """Tarjan's algorithm, iterative; components of more than one node, each sorted."""
    graph = {n: sorted(b for (a, b) in edges if a == n) for n in nodes}
    index, low, on_stack, stack, result, counter = {}, {}, set(), [], [], [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter[0]
                counter[0] += 1
                stack.append(node)
                on_stack.add(node)
            if child < len(graph[node]):
                work.append((node, child + 1))
                nxt = graph[node][child]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    result.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(result)


def check_cycles(tree, out, show_edges):
    edges, unresolved = build_graph(tree)
    cycles = strongly_connected(list(tree.files), edges)
    for n, component in enumerate(cycles, 1):
        out.append(f"cycle {n}: {len(component)} files: {', '.join(component)}")
        members = set(component)
        for (a, b), (line, path) in sorted(edges.items()):
            if a in members and b in members:
                out.append(f"    {a}:{line} -> {b}    ({path})")
    if show_edges:
        out.append(f"edges ({len(edges)}):")
        for (a, b), (line, path) in sorted(edges.items()):
            out.append(f"    {a}:{line} -> {b}    ({path})")
    for path, line, text in unresolved:
        out.append(f"note: {path}:{line}: `{text}` not resolved to a file of src/")
    in_cycles = sum(len(c) for c in cycles)
    summary = (
        f"cycles: {len(cycles)} between files of src/ ({in_cycles} files in them; "
        f"{len(tree.files)} files, {len(edges)} edges)"
    )
    return cycles, summary


def report_rooms(tree, out):
    """Rooms (top-level modules), the arrows between them, the paths that reach past a room's
    front door, and each room's private share."""
    past_doors = {}
    edges, _ = build_graph(tree, past_doors)
    rooms = {}
    for path in tree.files:
        rooms.setdefault(room_of(path), []).append(path)
    rooms.pop(None, None)
    arrows = {}
    for (a, b) in edges:
        ra, rb = room_of(a), room_of(b)
        if ra and rb and ra != rb:
            arrows[(ra, rb)] = arrows.get((ra, rb), 0) + 1
    out.append(f"rooms: {len(rooms)}; arrows between rooms: {sum(arrows.values())} file edges, "
               f"{len(arrows)} room pairs")
    for room in sorted(rooms):
        private = public = 0
        for path in rooms[room]:
            vis = tree.files[path].vis
            private += sum(n for k, n in vis["private"].items() if k != "field")
            public += sum(n for k, n in vis["pub"].items() if k != "field")
        share = private / (public + private) if public + private else 1.0
        outgoing = sorted(((rb, n) for (ra, rb), n in arrows.items() if ra == room),
                          key=lambda x: (-x[1], x[0]))
        doors = sorted(p for (p, r) in past_doors if r == room)
        out.append(f"room {room}: {len(rooms[room])} files, private share {share:.1%}, "
                   f"{len(doors)} files outside reach past its front door; -> "
                   + (", ".join(f"{rb} {n}" for rb, n in outgoing) or "nothing"))
    for (path, room), (line, text) in sorted(past_doors.items()):
        out.append(f"past the front door of {room}: {path}:{line}    ({text})")
    summary = (f"front doors: {len({p for p, _ in past_doors})} files reach past another "
               f"room's front door ({len(past_doors)} file-room pairs)")
    return past_doors, summary


def check_sizes(folders, max_lines, out):
    """The `.rs` files below each of `folders` (missing ones are skipped) over `max_lines`."""
    over = []
    for top in folders:
        for folder, _, names in os.walk(top):
            for name in names:
                if name.endswith(".rs"):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8") as f:
                        count = sum(1 for _ in f)
                    if count > max_lines:
                        over.append((os.path.relpath(path, os.path.dirname(top)), count))
    for path, count in sorted(over):
        out.append(f"over {max_lines} lines: {path} ({count})")
    return over, f"file size: {len(over)} files over {max_lines} lines"


def check_visibility(tree, min_share, out):
    totals = {"pub": {}, "private": {}}
    for info in tree.files.values():
        for side in totals:
            for kind, n in info.vis[side].items():
                totals[side][kind] = totals[side].get(kind, 0) + n
    fields = (totals["pub"].pop("field", 0), totals["private"].pop("field", 0))
    public, private = sum(totals["pub"].values()), sum(totals["private"].values())
    kinds = sorted(set(totals["pub"]) | set(totals["private"]))
    out.append(
        "visibility by kind (pub / crate-private): "
        + ", ".join(f"{k} {totals['pub'].get(k, 0)}/{totals['private'].get(k, 0)}" for k in kinds)
        + f"; not in the share: field {fields[0]}/{fields[1]}"
    )
    share = private / (public + private) if public + private else 1.0
    summary = (
        f"visibility: {private} crate-private of {public + private} counted items "
        f"({share:.1%}; {public} pub), minimum {min_share:.0%}"
    )
    return share, summary


def run(root, report=False, show_edges=False, max_lines=500, min_share=0.60):
    """Run the checks on the crate at `root`; returns (exit code, lines printed)."""
    src = os.path.join(root, "src")
    tree, out = Tree(src), []
    cycles, cycle_line = check_cycles(tree, out, show_edges)
    over, size_line = check_sizes([src, os.path.join(root, "tests")], max_lines, out)
    share, vis_line = check_visibility(tree, min_share, out)
    if report and tree.test_files:
        out.append("test-only files (not in the graph): " + ", ".join(sorted(tree.test_files)))
    if report:
        _, doors_line = report_rooms(tree, out)
        out.append("info " + doors_line)
        for folder in ("src", "tests"):
            for limit in (400, 500):
                lines = []
                long_files, _ = check_sizes([os.path.join(root, folder)], limit, lines)
                out.append(f"info {folder}/: {len(long_files)} files over {limit} lines")
    results = [(not cycles, cycle_line), (not over, size_line), (share >= min_share, vis_line)]
    out += [("ok   " if ok else "FAIL ") + line for ok, line in results]
    failed = not all(ok for ok, _ in results)
    return (1 if failed and not report else 0), out


# ----------------------------------------------------------------------------------------------
# Self-test (`--self-test`): synthetic crates written to a temporary folder.

SYNTHETIC = {
    "lib.rs": """
        //! Root. `crate::b::Bee` in a doc comment is no dependency.
        pub mod a;
        pub mod b;
        pub mod c;
        pub(crate) mod d;
        pub mod m;
        mod x;
    """,
    # a <-> b: a grouped `use` one way, an inline path the other way.
    "a.rs": """
        use crate::{b::Bee, m};
        pub struct Ay(pub Bee);
        pub(crate) fn make() -> m::Inner { todo!() }
    """,
    "b.rs": """
        pub struct Bee;
        fn g() {
            let text = "crate::c::Sea"; /* crate::c::Sea /* nested */ */
            let _ = crate::a::Ay(Bee);
        }
    """,
    # c -> m/inner.rs through the re-export in m/mod.rs, and c -> d.
    "c.rs": """
        use crate::m::Inner;
        use super::d::Dee as D;
        pub struct Sea(Inner, D);
        impl Sea {
            pub fn new() -> Self { todo!() }
            pub(crate) fn close(&self) {}
        }
        impl Clone for Sea { fn clone(&self) -> Self { todo!() } }
    """,
    # d's tests and test-only file name c: no edge, so no cycle c <-> d.
    "d.rs": """
        pub struct Dee;
        #[cfg(test)]
        #[path = "d_tests.rs"]
        mod tests;
        #[cfg(test)]
        mod more {
            use crate::c::Sea;
            fn t() { let _ = crate::c::Sea::new(); }
        }
        #[cfg(test)]
        fn helper() -> crate::c::Sea { todo!() }
    """,
    "d_tests.rs": """
        use crate::c::Sea;
    """,
    # m/mod.rs re-exports from its children and defines Em, which inner uses: no cycle, since
    # mod.rs does not use what it re-exports.
    "m/mod.rs": """
        mod inner;
        mod other;
        pub use inner::Inner;
        pub(crate) use other::{helper, Other};
        pub struct Em;
    """,
    "m/inner.rs": """
        use super::Em;
        pub struct Inner(pub Em, pub(crate) u8);
    """,
    "m/other.rs": """
        pub struct Other;
        pub(super) fn helper() -> char { let _ = super::inner::Inner(super::Em, b'x'); '"' }
    """,
    # x/p <-> x/q: p names q inline, q names P through the re-export in x/mod.rs.
    "x/mod.rs": """
        mod p;
        mod q;
        pub(crate) use p::P;
    """,
    "x/p.rs": """
        pub struct P;
        fn f<'a>(s: &'a str) -> &'a str { let _ = crate::x::q::Q::new(); s }
    """,
    "x/q.rs": """
        use super::P;
        pub struct Q(P);
        impl Q { pub fn new() -> Self { todo!() } }
        const RAW: &str = r#"crate::a::Ay " still a string"#;
    """,
}


class SelfTest(unittest.TestCase):
    def write(self, files):
        """Writes `files` under `src/`, but names starting `tests/`, which go under `tests/`."""
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        for name, text in files.items():
            under = name if name.startswith("tests/") else os.path.join("src", name)
            path = os.path.join(folder.name, under)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return folder.name

    def test_lexer_drops_comments_strings_chars_and_lifetimes(self):
        tokens = lex('a /* x /* y */ z */ "s\\"t" r#"u"v"# \'c\' \'\\n\' \'a b\n// c\nd')
        self.assertEqual([t[1] for t in tokens if t[0] == "id"], ["a", "b", "d"])
        self.assertEqual([t[1] for t in tokens if t[0] == "str"], ['s\\"t', 'u"v'])
        self.assertEqual(tokens[-1][2], 3)

    def test_use_tree_groups_renames_self_and_globs(self):
        out = []
        parse_use_tree(lex("a::{b::C, d as e, f::{self, *}};"), 0, (), out)
        self.assertEqual(
            [(s, alias) for s, alias, _ in out],
            [(("a", "b", "C"), "C"), (("a", "d"), "e"), (("a", "f"), "f"), (("a", "f"), "*")],
        )

    def test_finds_exactly_the_known_cycles(self):
        tree = Tree(os.path.join(self.write(SYNTHETIC), "src"))
        edges, unresolved = build_graph(tree)
        cycles = strongly_connected(list(tree.files), edges)
        self.assertEqual(cycles, [["src/a.rs", "src/b.rs"], ["src/x/p.rs", "src/x/q.rs"]])
        self.assertEqual(unresolved, [])
        # The re-exports in m/mod.rs and x/mod.rs resolve to the defining files; containment,
        # unused re-exports, tests, comments and strings are no dependency.
        self.assertEqual(
            edges,
            {
                ("src/a.rs", "src/b.rs"): (2, "crate::b::Bee"),
                ("src/a.rs", "src/m/inner.rs"): (4, "m::Inner"),
                ("src/b.rs", "src/a.rs"): (5, "crate::a::Ay"),
                ("src/c.rs", "src/d.rs"): (3, "super::d::Dee"),
                ("src/c.rs", "src/m/inner.rs"): (2, "crate::m::Inner"),
                ("src/m/inner.rs", "src/m/mod.rs"): (2, "super::Em"),
                ("src/m/other.rs", "src/m/inner.rs"): (3, "super::inner::Inner"),
                ("src/m/other.rs", "src/m/mod.rs"): (3, "super::Em"),
                ("src/x/p.rs", "src/x/q.rs"): (3, "crate::x::q::Q::new"),
                ("src/x/q.rs", "src/x/p.rs"): (2, "super::P"),
            },
        )
        self.assertEqual(sorted(tree.test_files), ["src/d_tests.rs"])
        self.assertNotIn("src/d_tests.rs", tree.files)

    def test_a_reexport_its_own_file_uses_is_a_dependency(self):
        files = dict(SYNTHETIC)
        files["m/mod.rs"] += "fn uses() -> Inner { todo!() }\n"
        tree = Tree(os.path.join(self.write(files), "src"))
        edges, _ = build_graph(tree)
        self.assertIn(("src/m/mod.rs", "src/m/inner.rs"), edges)
        cycles = strongly_connected(list(tree.files), edges)
        self.assertIn(["src/m/inner.rs", "src/m/mod.rs"], cycles)

    def test_globs_and_inline_modules(self):
        files = {
            "lib.rs": "mod a;\nmod b;\nmod c;\n",
            "a.rs": "use crate::b::*;\nfn f() -> Bee { todo!() }\n",
            "b.rs": "pub struct Bee;\npub mod inl {\n    pub fn f() { crate::c::g() }\n}\n",
            "c.rs": "pub fn g() {}\nfn h() { crate::b::inl::f() }\n",
        }
        tree = Tree(os.path.join(self.write(files), "src"))
        edges, unresolved = build_graph(tree)
        self.assertEqual(
            edges,
            {
                ("src/a.rs", "src/b.rs"): (1, "crate::b::Bee"),
                ("src/b.rs", "src/c.rs"): (3, "crate::c::g"),
                ("src/c.rs", "src/b.rs"): (2, "crate::b::inl::f"),
            },
        )
        self.assertEqual(unresolved, [])

    def test_no_cycle_no_failure(self):
        files = {k: v for k, v in SYNTHETIC.items()}
        files["b.rs"] = "pub struct Bee;\n"
        files["x/p.rs"] = "pub struct P;\n"
        code, out = run(self.write(files), min_share=0.30)
        self.assertEqual(code, 0, out)
        self.assertIn("ok   cycles: 0 between files of src/", out[-3])

    def test_cycles_and_long_files_fail_unless_report(self):
        files = dict(SYNTHETIC)
        files["long.rs"] = "\n" * 501
        root = self.write(files)
        code, out = run(root)
        self.assertEqual(code, 1)
        self.assertTrue(out[-3].startswith("FAIL cycles: 2 between files of src/"), out[-3])
        self.assertEqual(out[-2], "FAIL file size: 1 files over 500 lines")
        self.assertIn("over 500 lines: src/long.rs (501)", out)
        self.assertIn("    src/a.rs:2 -> src/b.rs    (crate::b::Bee)", out)
        self.assertEqual(run(root, report=True)[0], 0)

    def test_long_files_under_tests_fail_too(self):
        files = {k: v for k, v in SYNTHETIC.items()}
        files["b.rs"] = "pub struct Bee;\n"
        files["x/p.rs"] = "pub struct P;\n"
        files["tests/short.rs"] = "\n" * 500
        files["tests/support/long.rs"] = "\n" * 501
        root = self.write(files)
        code, out = run(root, min_share=0.30)
        self.assertEqual(code, 1, out)
        self.assertEqual(out[-2], "FAIL file size: 1 files over 500 lines")
        self.assertIn("over 500 lines: tests/support/long.rs (501)", out)
        self.assertFalse(any("tests/short.rs" in line for line in out), out)
        code, out = run(root, report=True, min_share=0.30)
        self.assertEqual(code, 0)
        self.assertIn("info tests/: 2 files over 400 lines", out)
        self.assertIn("info tests/: 1 files over 500 lines", out)
        # Cycles and visibility still look at src/ alone: a test file is no node of the graph.
        self.assertIn("ok   cycles: 0 between files of src/", out[-3])

    def test_visibility_counts_items_and_methods_not_fields_or_tests(self):
        tree = Tree(os.path.join(self.write(SYNTHETIC), "src"))
        out = []
        share, line = check_visibility(tree, 0.6, out)
        # pub: mod a, b, c, m; struct Ay, Bee, Sea, Dee, Em, Inner, Other, P, Q; use Inner;
        #      methods Sea::new, Q::new. crate-private: mod d; fn make, helper; use helper,
        #      Other, P; method Sea::close. Fields: pub 2 (Ay.0, Inner.0), crate-private 1.
        self.assertIn("fn 0/2", out[0])
        self.assertIn("method 2/1", out[0])
        self.assertIn("field 2/1", out[0])
        self.assertTrue(line.startswith("visibility: 7 crate-private of 23 counted items"), line)
        self.assertAlmostEqual(share, 7 / 23)


class RoomsTest(unittest.TestCase):
    write = SelfTest.write

    def test_paths_past_another_rooms_front_door_are_reported(self):
        root = self.write({
            "lib.rs": "pub mod kb;\npub mod rag;\n",
            "kb/mod.rs": "pub mod bundle;\npub use bundle::Bundle;\n",
            "kb/bundle.rs": "pub struct Bundle;\npub struct Piece;\n",
            "rag/mod.rs": "mod a;\nmod b;\nmod c;\n",
            "rag/a.rs": "use crate::kb::Bundle;\npub struct A(Bundle);\n",
            "rag/b.rs": "use crate::kb::bundle::Piece;\npub struct B(Piece);\n",
            "rag/c.rs": "use crate::kb::bundle;\npub struct C(bundle::Bundle);\n",
        })
        code, out = run(root, report=True)
        self.assertEqual(code, 0)
        doors = [line for line in out if line.startswith("past the front door")]
        self.assertEqual(doors, [
            "past the front door of kb: src/rag/b.rs:1    (crate::kb::bundle::Piece)",
            "past the front door of kb: src/rag/c.rs:2    (bundle::Bundle)",
        ])
        self.assertIn("room kb: 2 files, private share 0.0%, 2 files outside reach past its "
                      "front door; -> nothing", out)
        self.assertIn("rooms: 2; arrows between rooms: 3 file edges, 1 room pairs", out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--root", default=default_root, help="the crate (default: this repo)")
    parser.add_argument("--report", action="store_true", help="print everything, never fail")
    parser.add_argument("--edges", action="store_true", help="also print every edge")
    parser.add_argument("--max-lines", type=int, default=500)
    parser.add_argument("--min-private-share", type=float, default=0.60)
    parser.add_argument("--self-test", action="store_true", help="run the script's own tests")
    args = parser.parse_args(argv)
    if args.self_test:
        loader = unittest.defaultTestLoader
        suite = unittest.TestSuite([loader.loadTestsFromTestCase(SelfTest),
                                    loader.loadTestsFromTestCase(RoomsTest)])
        return 0 if unittest.TextTestRunner(verbosity=1).run(suite).wasSuccessful() else 1
    code, out = run(args.root, args.report, args.edges, args.max_lines, args.min_private_share)
    print("\n".join(out))
    return code


if __name__ == "__main__":
    sys.exit(main())
