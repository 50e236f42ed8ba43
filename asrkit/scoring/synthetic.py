"""Seeded reference/hypothesis pairs for tests and benchmarks of scoring.

Two kinds: random pairs over a tiny vocabulary (many equal-cost alignments, which
is where implementations disagree on the S/D/I split) and English sentences with
ASR-like errors (homophones, split and merged words, dropped function words,
fillers).  Both take a `random.Random`, so a seed fixes the whole set.
"""

SENTENCES = [
    "the weather in new york will be sunny with a high of seventy degrees",
    "please set an alarm for seven thirty tomorrow morning",
    "call my mother on her mobile phone",
    "what is the fastest way to get to the airport from here",
    "play some music by the beatles in the living room",
    "turn off all the lights in the kitchen",
    "how many ounces are there in a pound",
    "remind me to buy milk and bread on the way home",
    "i would like to book a table for two at eight o'clock",
    "send a text message to john saying i will be late",
    "what time does the pharmacy on main street close today",
    "there are too many cars on the road to get there in time",
    "their house is right next to the old train station",
    "can you tell me a joke about cats",
    "navigate to the nearest gas station that is open",
    "what is the capital city of australia",
    "add eggs butter and flour to my shopping list",
    "read me the latest news about the football game",
    "we need to leave in ten minutes or we will miss the bus",
    "it is all right if you cannot come to the meeting",
    "the quick brown fox jumps over the lazy dog",
    "i think it will rain a lot later this afternoon",
    "how do you say thank you very much in spanish",
    "show me pictures from my trip to the mountains last summer",
    "who won the world cup in nineteen ninety eight",
    "set the thermostat to sixty eight degrees",
    "my flight to chicago has been delayed by two hours",
    "is there a good italian restaurant near the hotel",
    "you are going to need an umbrella for the walk",
    "translate where is the library into french",
]

HOMOPHONES = {
    "there": ["their", "they're"], "their": ["there"], "to": ["two", "too"], "too": ["to"],
    "two": ["to"], "for": ["four"], "four": ["for"], "right": ["write"], "write": ["right"],
    "by": ["buy", "bye"], "buy": ["by"], "new": ["knew"], "know": ["no"], "no": ["know"],
    "here": ["hear"], "hear": ["here"], "eight": ["ate"], "won": ["one"], "one": ["won"],
    "way": ["weigh"], "sunny": ["sonny"], "road": ["rode"], "pound": ["found"],
    "whether": ["weather"], "weather": ["whether"], "in": ["and"], "and": ["in"],
}
SPLITS = {
    "cannot": ["can", "not"], "into": ["in", "to"], "airport": ["air", "port"],
    "thermostat": ["thermo", "stat"], "afternoon": ["after", "noon"],
    "nineteen": ["nine", "teen"], "seventy": ["seven", "tee"], "shopping": ["shop", "in"],
    "o'clock": ["o", "clock"], "football": ["foot", "ball"],
}
MERGES = {
    ("a", "lot"): "alot", ("all", "right"): "alright", ("going", "to"): "gonna",
    ("new", "york"): "newyork", ("gas", "station"): "gasstation", ("next", "to"): "nexto",
}
FUNCTION_WORDS = {"the", "a", "an", "of", "to", "in", "on", "and", "is", "at", "for", "my"}
FILLERS = ["uh", "um", "the", "a", "and"]


def random_pair(rng, max_length=20):
    """A reference and hypothesis over a vocabulary of 2 to 30 words; either may be empty."""
    vocabulary = [f"w{index}" for index in range(rng.randint(2, 30))]
    ref = [rng.choice(vocabulary) for _ in range(rng.randint(0, max_length))]
    if rng.random() < 0.1:
        return ref, [rng.choice(vocabulary) for _ in range(rng.randint(0, max_length))]
    hyp = list(ref)
    for _ in range(rng.randint(0, max(1, len(ref) // 2))):
        operation = rng.choice("sdi")
        if operation == "i" or not hyp:
            hyp.insert(rng.randint(0, len(hyp)), rng.choice(vocabulary))
        elif operation == "d":
            del hyp[rng.randrange(len(hyp))]
        else:
            hyp[rng.randrange(len(hyp))] = rng.choice(vocabulary)
    if rng.random() < 0.03:
        hyp = []
    return ref, hyp


def asr_like_hypothesis(rng, ref, error_rate=0.15):
    """`ref` with recognition errors of the kinds ASR systems make."""
    hyp = []
    position = 0
    while position < len(ref):
        word = ref[position]
        pair = tuple(ref[position:position + 2])
        roll = rng.random()
        if pair in MERGES and roll < error_rate * 3:
            hyp.append(MERGES[pair])
            position += 2
            continue
        if roll < error_rate:
            kind = rng.random()
            if word in HOMOPHONES and kind < 0.4:
                hyp.append(rng.choice(HOMOPHONES[word]))
            elif word in SPLITS and kind < 0.6:
                hyp.extend(SPLITS[word])
            elif word in FUNCTION_WORDS and kind < 0.8:
                pass  # dropped
            elif kind < 0.9:
                hyp.append(word)
                hyp.append(rng.choice(FILLERS))
            else:
                hyp.append(rng.choice(SENTENCES).split()[0])
        else:
            hyp.append(word)
        position += 1
    return hyp


def realistic_pair(rng):
    """An English sentence (sometimes two joined, sometimes empty) and an ASR-like hypothesis."""
    roll = rng.random()
    if roll < 0.02:
        ref = []
    elif roll < 0.2:
        ref = (rng.choice(SENTENCES) + " " + rng.choice(SENTENCES)).split()
    else:
        ref = rng.choice(SENTENCES).split()
    hyp = asr_like_hypothesis(rng, ref, error_rate=rng.choice([0.0, 0.05, 0.15, 0.3]))
    if not ref and rng.random() < 0.5:
        hyp = rng.choice(SENTENCES).split()[:3]
    return ref, hyp


def sentence_pairs(rng, count, realistic_fraction=0.5):
    """`count` pairs, a mix of random and realistic ones."""
    return [
        realistic_pair(rng) if rng.random() < realistic_fraction else random_pair(rng)
        for _ in range(count)
    ]
