"""Two or more of a package's networks combined frame by frame, as asrkit-decode --combine-model combines them.

A package exported with a second model of the same tree (asrkit-export --combine-model) holds both networks;
the recognizer decodes

    rows[t, pdf] = sum_i coefficient_i x (log posterior_i[t, pdf] - scaled log prior_i[pdf])

with coefficient_1 = (1 - w) x s_1 and coefficient_2 = w x s_2 (asrkit.decode.combined_loglikes: each model at
its own acoustic scale s_i, the weight w between them, all chosen on dev), at the package's acoustic scale.
`CombinedNetwork` is such a sum with a Network's interface (asrkit.inference.network): `log_posteriors`,
`stream`, and `evaluate` of several streams' inputs at once (each member's windows of every stream in one
pass, so a server batches a combination as it batches one network).  Its rows have the priors already
subtracted; the acoustic model that holds it subtracts none.

Rows that only make partial results come from the first member alone, at its own acoustic scale
(`lead_scale`).  A streaming step multiplies a few rows by all of a layer's weights, so it costs nearly what
it would for a dozen rows: the windows a stream adds after each piece for partial results cost about as much
as the grid's windows, and a combination would pay for them once per member.  Two-pass recognisers do the
same: a cheaper first pass shows the partial results, the second one makes the final ones ("Two-Pass
End-to-End Speech Recognition", Sainath et al., 2019).  So a combination's tentative rows
(asrkit.inference.network.GroupStream) are the first member's, and `lead()` is the first member alone, for a
stream whose final results come from a batch pass (asrkit.recognizer.stream).
"""

import copy

import numpy as np


class CombinedNetwork:
    """members: [(Network, coefficient, scaled log priors [num_pdfs])], all with the same pdfs and features;
    lead_scale: the first member's coefficient where its rows stand alone (its own acoustic scale; None: its
    coefficient in the combination)."""

    def __init__(self, members, lead_scale=None):
        networks = [network for network, _, _ in members]
        shapes = [(network.feature_dim, network.num_pdfs) for network in networks]
        if len(set(shapes)) > 1:
            raise ValueError(f"combined networks must have the same features and pdfs, not {shapes}")
        self.networks = networks
        self.coefficients = [float(coefficient) for _, coefficient, _ in members]
        self.log_priors = [np.asarray(log_priors, np.float32) for _, _, log_priors in members]
        self.feature_dim = networks[0].feature_dim
        self.num_pdfs = networks[0].num_pdfs
        self.label_delay = max(network.label_delay for network in networks)
        self.lead_scale = self.coefficients[0] if lead_scale is None else float(lead_scale)

    def combine(self, rows):
        """The members' log-posterior rows (equally many) -> the combination's, priors subtracted."""
        total = np.zeros((len(rows[0]), self.num_pdfs), np.float64)
        for part, coefficient, log_priors in zip(rows, self.coefficients, self.log_priors):
            total += coefficient * (part - log_priors)
        return total.astype(np.float32)

    def lead_rows(self, rows):
        """The first member's log-posterior rows alone -> rows on the combination's scale, priors subtracted."""
        return (self.lead_scale * (rows - self.log_priors[0])).astype(np.float32)

    def lead(self):
        """The first member alone (rows `lead_rows`), as a CombinedNetwork of one."""
        return CombinedNetwork([(self.networks[0], self.lead_scale, self.log_priors[0])])

    def log_posteriors(self, features):
        return self.combine([network.log_posteriors(features) for network in self.networks])

    def stream(self, windows="grid"):
        """The members' streams; with "tentative" windows only the first member computes tentative rows (the
        others keep what ends their pending() rows as eager ones do: asrkit.inference.network.GroupStream)."""
        return CombinedStream(self, [network.stream(windows, tentative_rows=index == 0)
                                     for index, network in enumerate(self.networks)])

    def evaluate(self, inputs):
        """Network.evaluate over streams' CombinedStream.begin inputs (tuples, one per member, or None)."""
        outputs = [network.evaluate([None if value is None else value[index] for value in inputs])
                   for index, network in enumerate(self.networks)]
        return [None if value is None else tuple(output[position] for output in outputs)
                for position, value in enumerate(inputs)]

    def empty_rows(self):
        return np.zeros((0, self.num_pdfs), np.float32)


class CombinedStream:
    """The members' streams side by side; a frame's combined row comes once every member has given its row."""

    def __init__(self, network, members):
        self.network = network
        self.members = members
        self.delay = max(member.delay for member in members)
        self.waiting = [network.empty_rows() for _ in members]  # rows given by some members, not yet by all

    def __copy__(self):
        twin = CombinedStream.__new__(CombinedStream)
        twin.network, twin.delay, twin.waiting = self.network, self.delay, list(self.waiting)
        twin.members = [copy.copy(member) for member in self.members]
        return twin

    def begin(self, features):
        inputs = tuple(member.begin(features) for member in self.members)
        return None if all(value is None for value in inputs) else inputs

    def end(self, outputs):
        if outputs is None:
            return self.network.empty_rows()
        return self._combined([member.end(output) for member, output in zip(self.members, outputs)])

    def accept(self, features):
        return self.end(self.network.evaluate([self.begin(features)])[0])

    def finish(self):
        return self._combined([member.finish() for member in self.members])

    def pending(self):
        """The combined rows finish() would give now, the stream left as it is."""
        return copy.copy(self)._combined([member.pending() for member in self.members])

    def pending_frames(self):
        return max(member.pending_frames() for member in self.members)

    def tentative(self):
        """The first member's rows after the combined ones, on the combination's scale (CombinedNetwork.lead_rows):
        those it has given and others not yet, then its tentative rows (asrkit.inference.network._Stream
        .tentative)."""
        lead = self.members[0]
        return self.network.lead_rows(np.concatenate([self.waiting[0], lead.tentative()]))

    def _combined(self, new_rows):
        self.waiting = [np.concatenate([old, new]) for old, new in zip(self.waiting, new_rows)]
        ready = min(len(rows) for rows in self.waiting)
        combined = self.network.combine([rows[:ready] for rows in self.waiting])
        self.waiting = [rows[ready:] for rows in self.waiting]
        return combined
