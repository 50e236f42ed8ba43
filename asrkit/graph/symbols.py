"""Symbol tables in Kaldi's text format (`symbol id` per line), as phones.txt and words.txt are written."""

import os

from asrkit.errors import AsrkitError
from asrkit.io.atomic import atomic_output


class SymbolTableError(AsrkitError):
    """A symbol table file that is missing or malformed."""


class SymbolTable:
    """A bijection symbol <-> integer id, in the order the ids were given."""

    def __init__(self, pairs=()):
        self.id_of = {}
        self.symbol_of = {}
        for symbol, symbol_id in pairs:
            self.add(symbol, symbol_id)

    def add(self, symbol, symbol_id=None):
        if symbol_id is None:
            symbol_id = max(self.symbol_of, default=-1) + 1
        if symbol in self.id_of:
            raise SymbolTableError(f"symbol {symbol!r} is defined twice")
        if symbol_id in self.symbol_of:
            raise SymbolTableError(f"id {symbol_id} is given to {self.symbol_of[symbol_id]!r} and {symbol!r}")
        self.id_of[symbol] = symbol_id
        self.symbol_of[symbol_id] = symbol
        return symbol_id

    def __contains__(self, symbol):
        return symbol in self.id_of

    def __getitem__(self, symbol):
        return self.id_of[symbol]

    def __len__(self):
        return len(self.id_of)

    def get(self, symbol, default=None):
        return self.id_of.get(symbol, default)

    def symbols(self):
        return list(self.id_of)

    def max_id(self):
        return max(self.symbol_of, default=-1)

    def items(self):
        """(symbol, id) pairs in increasing id order."""
        return sorted(self.id_of.items(), key=lambda pair: pair[1])

    def phones(self):
        """{phone: id} of a phone table without <eps> (id 0) and the disambiguation symbols (#...)."""
        return {name: phone_id for name, phone_id in self.items() if phone_id > 0 and not name.startswith("#")}

    def write(self, path):
        with atomic_output(path) as out:
            for symbol, symbol_id in self.items():
                out.write(f"{symbol} {symbol_id}\n")

    @classmethod
    def read(cls, path):
        path = os.fspath(path)
        if not os.path.exists(path):
            raise SymbolTableError(f"symbol table {path} does not exist")
        table = cls()
        with open(path, encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, 1):
                fields = line.split()
                if not fields:
                    continue
                if len(fields) != 2 or not fields[1].lstrip("-").isdigit():
                    raise SymbolTableError(f"{path}:{line_number}: expected 'symbol id', got {line.rstrip()!r}")
                try:
                    table.add(fields[0], int(fields[1]))
                except SymbolTableError as error:
                    raise SymbolTableError(f"{path}:{line_number}: {error}") from None
        return table


def write_symbol_list(path, symbols, table=None):
    """Kaldi's phones/*.txt (one symbol a line) or, with a table, phones/*.int (one id a line)."""
    with atomic_output(path) as out:
        for symbol in symbols:
            out.write(f"{symbol if table is None else table[symbol]}\n")


def write_csl(path, symbols, table):
    """Kaldi's colon-separated id list (phones/silence.csl)."""
    with atomic_output(path) as out:
        out.write(":".join(str(table[symbol]) for symbol in symbols) + "\n")


def read_int_list(path):
    with open(path, encoding="utf-8") as handle:
        return [int(token) for token in handle.read().split()]
