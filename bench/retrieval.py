"""Retrieval benchmark: full-text, vector and hybrid search (chatetl.search) side by side, on generated chats.

    NEO4J_URI=bolt://127.0.0.1:7687 .venv/bin/python bench/retrieval.py [--set topics|memory|both] [--queries 300]
        [--asides 3,7] [--sessions 150] [--keep]
    NEO4J_URI=... .venv/bin/python bench/retrieval.py --scale 10000,100000,1000000 --keep   # search latency by graph size
    NEO4J_URI=... .venv/bin/python bench/retrieval.py --scale 1000000 --reuse --keep  # again, on the graph kept

Two question sets, generated (never real chats). The memory set (`memory_corpus`) is one
person's long history: sessions of many exchanges, each (subject, kind of question) remembered in
one user turn, every subject also talked around in other sessions; its questions (facts, "when
did …", "what did I decide about …", names, dates; half of them naming the subject in other
words) are answered by one turn, and the table adds whether a top-5 hit holds that turn.

The topics set: 500 conversations, each about one thing going wrong with one
thing (25 areas of life × 5 things × 4 of 8 troubles: a bicycle's chain that keeps breaking, a
sourdough starter that smells strange ...), said by a user who lives in one of 40 cities and
names the thing's model or error code (`KX4417`: one per conversation), with the assistant's
tips of that area and a follow-up exchange, somewhere among 3 to 7 exchanges of general advice
on other areas (--asides: one chat, several subjects, as people use them, so a chunk's vector
is not about one thing only; `--asides 0,0`: chats about the one thing, where a vector alone
does best). Each (area, thing, trouble) is said in exactly one conversation; the cities
and the tips are shared by many.

A query paraphrases the user's first message (`thing` and `trouble` in other words: "drive
links" for the chain, "snaps again and again" for "keeps breaking", "bike" for "bicycle") in
one of a few templates, as one of four kinds, a quarter each:

- reworded: nothing of the conversation's words;
- with the city: reworded, plus the detail one remembers, the city (each city is in about 12
  conversations, so it does not name the conversation alone);
- with a word: reworded, but the thing's last word as said ("pads" of "brake pads"; "card"
  is also in "credit card" and "memory card");
- with the code: reworded, plus the model or error code (what one searches for when the
  words are forgotten but the code is on the screen).

Every query is checked to share at most one word with its conversation (the check's figures
are printed) and no query is a substring of it. The table is printed for all queries and per
kind: the reworded queries are where full-text search cannot help.

The corpus goes through the real code path into the Neo4j of NEO4J_URI (the local services'
defaults otherwise): the graph load (chatetl.graph.load), then the documents stage
(chatetl.rag.partition.write_upload_documents into a temporary bucket folder), timed without
embeddings, with the built-in model, and rerun unchanged. Then every query runs in each mode
(`chatetl.search.search`, k=10, one hit per conversation; hybrid with the score blend and with
reciprocal rank fusion, main's before it), and the Markdown table gives recall@1/5/10 and nDCG@10
per mode, for all questions and per kind, then the latency p50/p95 (one client, the query's
embedding included). The model's throughput on 1,800-character chunks is measured apart, and the
memory the model takes once loaded, beside the process's peak. `--model` picks the embedder as
CHATETL_EMBEDDER does (`wordllama`, `minilm`, or `module:callable`; default: that setting).

The benchmark's nodes live under their own platform (`bench-retrieval`) and are deleted before
and after (unless --keep); when the database holds other chunks the searches are filtered to the
benchmark's platform (and say so), as they would otherwise be distractors.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "deploy"))

from local_env import ensure_local_env

import chatetl.search
from chatetl.graph.connection import neo4j_settings, open_driver
from chatetl.graph.load import load_conversations
from chatetl.model import Conversation, Message, Role, Source
from chatetl.rag.embeddings import load_embedder
from chatetl.rag.partition import DocumentsResult, write_upload_documents
from chatetl.readers.tree import resolve_branches
from chatetl.search import SearchFilters, search
from chatetl.storage import LocalObjectStore

PLATFORM = "bench-retrieval"
T0 = datetime(2025, 1, 1, tzinfo=UTC)

# area: (the word a conversation uses, the word a query uses, [(thing, its paraphrase)], the area's tips)
AREAS: list[tuple[str, str, list[tuple[str, str]], list[str]]] = [
    ("bicycle", "bike", [("chain", "drive links"), ("brake pads", "stopping blocks"), ("derailleur", "gear changer"),
                         ("saddle", "seat"), ("spokes", "wheel wires")],
     ["Clean it with degreaser and oil it lightly.", "Check the cable tension and the limit screws.", "Worn parts are cheap to swap at a cycle shop."]),
    ("car", "automobile", [("alternator", "charging generator"), ("windscreen wipers", "glass sweepers"), ("clutch", "gear pedal"),
                           ("exhaust", "tailpipe"), ("radiator", "engine cooler")],
     ["Have a mechanic read the fault codes first.", "Check the belts and the coolant level.", "A garage can test it in ten minutes."]),
    ("cooking", "culinary", [("sourdough starter", "leaven culture"), ("cast iron pan", "heavy skillet"), ("risotto", "creamy arborio"),
                             ("custard", "egg cream dessert"), ("omelette", "folded eggs")],
     ["Keep the heat low and stir patiently.", "Weigh the ingredients instead of using cups.", "Season it and let it rest before serving."]),
    ("garden", "yard", [("tomato plants", "vine fruit seedlings"), ("roses", "thorny blooms"), ("lawn", "turf grass"),
                        ("compost heap", "rotting scraps pile"), ("apple tree", "orchard sapling")],
     ["Water early in the morning at the roots.", "Mulch keeps the soil moist and cool.", "Prune in late winter before new growth."]),
    ("tax return", "revenue filing", [("home office deduction", "study room allowance"), ("capital gains", "investment profits"),
                                      ("mileage claim", "travel expense refund"), ("pension contributions", "retirement savings payments"),
                                      ("VAT invoice", "sales levy slip")],
     ["Keep every receipt for at least six years.", "An accountant can check the figures before you submit.", "The deadline is the end of January."]),
    ("Python code", "script", [("dictionary lookup", "mapping access"), ("unit tests", "automated checks"),
                               ("virtual environment", "isolated interpreter setup"), ("regular expression", "pattern matcher"),
                               ("database query", "SQL request")],
     ["Add logging around the failing line.", "Pin the versions of your dependencies.", "Write a small reproduction first."]),
    ("trip", "journey", [("passport", "identity booklet"), ("train ticket", "rail fare"), ("hotel booking", "lodging reservation"),
                         ("luggage", "suitcase"), ("travel insurance", "holiday cover policy")],
     ["Book two months ahead for the best prices.", "Keep copies of the documents on your phone.", "Call the provider before you leave."]),
    ("photography", "pictures", [("lens", "optics"), ("tripod", "three-legged stand"), ("flash", "strobe"),
                                 ("memory card", "storage chip"), ("autofocus", "focusing motor")],
     ["Update the camera firmware.", "Shoot in raw to keep the detail.", "Clean the contacts with a dry cloth."]),
    ("workout", "fitness", [("running shoes", "jogging trainers"), ("knee", "leg joint"), ("protein shake", "whey drink"),
                            ("rowing machine", "ergometer"), ("heart rate monitor", "pulse tracker")],
     ["Warm up for ten minutes first.", "Rest days matter as much as training days.", "See a physiotherapist if the pain lasts."]),
    ("music", "instrument", [("guitar strings", "fretboard wires"), ("piano pedal", "keyboard foot lever"), ("violin bow", "fiddle stick"),
                             ("drum skin", "percussion head"), ("amplifier", "speaker cabinet")],
     ["Humidity changes are hard on wood.", "A luthier can set it up properly.", "Practise slowly with a metronome."]),
    ("house", "home", [("boiler", "central heating unit"), ("roof tiles", "shingles"), ("kitchen tap", "sink faucet"),
                       ("window frame", "glazing surround"), ("smoke alarm", "fire detector")],
     ["Turn off the supply before opening it.", "A plumber or roofer should inspect it yearly.", "Photograph everything for the landlord."]),
    ("pet", "animal", [("puppy", "young dog"), ("cat litter", "feline toilet grit"), ("hamster wheel", "rodent exercise ring"),
                       ("parrot", "talking bird"), ("rabbit hutch", "bunny enclosure")],
     ["Ask the vet at the next checkup.", "Keep the routine the same every day.", "Clean the bedding every week."]),
    ("bank", "money", [("credit card", "plastic borrowing"), ("mortgage", "home loan"), ("savings account", "deposit fund"),
                       ("budget spreadsheet", "spending plan sheet"), ("stock portfolio", "share holdings")],
     ["Compare the interest rates of three lenders.", "Set up an automatic transfer on payday.", "Read the terms for hidden charges."]),
    ("chess", "board game", [("opening repertoire", "initial moves plan"), ("endgame", "final phase"), ("knight", "horse piece"),
                             ("chess clock", "game timer"), ("rating", "Elo score")],
     ["Review your games with an engine afterwards.", "Solve tactics puzzles daily.", "Play longer time controls to learn."]),
    ("telescope", "stargazing", [("eyepiece", "ocular"), ("star chart", "sky map"), ("mount", "tracking base"),
                                 ("moon photos", "lunar images"), ("light pollution", "urban glow")],
     ["Let it cool outside for half an hour.", "Align the finder scope during the day.", "Dark sites outside town help a lot."]),
    ("knitting", "yarn craft", [("needles", "pins"), ("wool", "sheep fibre"), ("cable pattern", "twisted stitch design"),
                                ("sweater", "jumper"), ("scarf", "neck wrap")],
     ["Knit a gauge swatch first.", "Block the piece after washing it.", "Use a lifeline thread in tricky rows."]),
    ("aquarium", "fish tank", [("filter", "purifying unit"), ("goldfish", "orange carp"), ("aquatic plants", "underwater greenery"),
                               ("heater", "warming element"), ("gravel", "substrate pebbles")],
     ["Test the water weekly for ammonia and nitrite.", "Change a quarter of the water every week.", "Do not overfeed."]),
    ("coffee", "brew", [("grinder", "bean mill"), ("espresso machine", "portafilter brewer"), ("milk frother", "foam wand"),
                        ("dripper", "drip cone"), ("french press", "plunger pot")],
     ["Descale it once a month.", "Use beans roasted recently.", "Weigh the dose and the water."]),
    ("wine", "vino", [("cork", "bottle stopper"), ("decanter", "carafe"), ("red wine", "claret"),
                      ("wine fridge", "cellar cooler"), ("vineyard tour", "winery visit")],
     ["Store bottles lying down away from light.", "Let it breathe for an hour.", "Ask the sommelier for a pairing."]),
    ("hiking", "trekking", [("boots", "walking footwear"), ("backpack", "rucksack"), ("tent", "shelter"),
                            ("trail map", "route chart"), ("water filter", "purifier")],
     ["Break new gear in on short walks.", "Check the weather forecast the night before.", "Pack a spare layer and a headlamp."]),
    ("sleep", "slumber", [("mattress", "sleeping pad"), ("pillow", "head cushion"), ("alarm clock", "waking gadget"),
                       ("snoring", "noisy nighttime breathing"), ("insomnia", "sleeplessness")],
     ["Keep the bedroom dark and cool.", "No screens an hour before bed.", "Get up at the same time every day."]),
    ("toddler", "child", [("car seat", "baby carrier"), ("stroller", "pushchair"), ("nappies", "diapers"),
                          ("bedtime routine", "evening ritual"), ("school lunch", "packed meal")],
     ["Keep things predictable for them.", "Ask the health visitor for a second opinion.", "Involve them in small choices."]),
    ("Spanish lessons", "language learning", [("vocabulary", "word list"), ("pronunciation", "accent"), ("grammar", "sentence rules"),
                                              ("flashcards", "memory cards"), ("chat partner", "speaking buddy")],
     ["Fifteen minutes every day beats two hours once a week.", "Listen to podcasts at normal speed.", "Speak from the first week."]),
    ("woodworking", "carpentry", [("chisel", "blade tool"), ("table saw", "circular cutter"), ("wood glue", "carpenter adhesive"),
                                  ("sandpaper", "abrasive sheet"), ("workbench", "joinery table")],
     ["Sharpen the edge before every session.", "Clamp the piece firmly.", "Work with the grain, never against it."]),
    ("electronics", "circuits", [("soldering iron", "solder tool"), ("breadboard", "prototype board"), ("battery", "cell pack"),
                                 ("LED", "diode light"), ("multimeter", "voltage tester")],
     ["Check the polarity twice.", "Measure before you power it up.", "Keep the workspace free of static."]),
]
# a trouble: (as the user says it, a paraphrase with none of its words)
TROUBLES = [
    ("keeps breaking", "snaps again and again"),
    ("makes a squeaking noise", "emits a shrill squeal"),
    ("wore out after a month", "degraded within weeks"),
    ("is far too expensive", "costs a fortune"),
    ("stopped working", "died completely"),
    ("smells strange", "carries an odd odour"),
    ("looks discoloured", "has changed colour"),
    ("is too slow", "takes forever"),
]
CITIES = ["Lisbon", "Porto", "Seville", "Valencia", "Lyon", "Marseille", "Bordeaux", "Ghent", "Utrecht", "Bremen", "Leipzig", "Dresden", "Graz", "Salzburg", "Krakow", "Gdansk", "Brno", "Bratislava", "Ljubljana", "Zagreb", "Split", "Trieste", "Bologna", "Verona", "Turin", "Naples", "Palermo", "Malaga", "Bilbao", "Cork", "Galway", "Bergen", "Tampere", "Uppsala", "Aarhus", "Tallinn", "Riga", "Vilnius", "Sofia", "Cluj"]
OPENINGS = [
    "I live in {city} and my {thing} {trouble}. Any idea why?",
    "Since moving to {city}, my {thing} {trouble}. Is that normal with {area} things?",
    "Quick {area} question from {city}: my {thing} {trouble}.",
    "Back in {city} my {thing} {trouble} and I am not sure where to start.",
]
CODE_SENTENCES = ["The label on it says {code}.", "It shows error {code} now and then.", "Mine is the {code} model."]
ASIDES = [
    "Different topic: what should a beginner know about {area} things?",
    "Any general {area} advice while I have you?",
    "What do people usually get wrong with {area} stuff?",
    "One more, unrelated: how do I get better at {area} matters?",
]
CLOSINGS = ["Hope this helps!", "Let me know how it goes.", "Happy to help if anything else comes up.", "Good luck with it."]
FOLLOW_UPS = [
    ("Thanks. How long does that usually take?", "Usually an afternoon if you have the tools at hand."),
    ("Would a local shop do it for me?", "Most will, and they often give a quote on the spot."),
    ("Is it worth doing myself?", "Yes, if you are patient; it is a good thing to learn."),
]
QUERIES = [
    "{areaq} {thingq} {troubleq}{place}",
    "my {thingq} {troubleq}{place}",
    "what to do when the {thingq} {troubleq}{place}",
    "{areaq}: {thingq} that {troubleq}{place}",
]
KINDS = ("reworded", "with the city", "with a word", "with the code")
_WORD = re.compile(r"\w+")
_QUERY_STOP = {"the", "a", "an", "my", "that", "what", "to", "do", "when", "in", "and"}


def corpus(rng: random.Random, asides: tuple[int, int] = (3, 7)) -> tuple[list[Conversation], list[dict[str, Any]]]:
    """The conversations, and per conversation what a query needs: its key, the paraphrase parts, its city."""
    convs, facts = [], []
    n = 0
    for a, (area, areaq, things, tips) in enumerate(AREAS):
        for t, (thing, thingq) in enumerate(things):
            for step in range(4):
                p = (t * 2 + step) % len(TROUBLES)
                trouble, troubleq = TROUBLES[p]
                city = CITIES[(n * 7) % len(CITIES)]
                cid = f"retrieval-{n:04d}"
                code = f"{chr(65 + n % 26)}{chr(65 + (n * 7 + 3) % 26)}{1000 + (n * 7919) % 9000}"
                first = OPENINGS[n % len(OPENINGS)].format(city=city, thing=thing, trouble=trouble, area=area)
                first += " " + CODE_SENTENCES[n % len(CODE_SENTENCES)].format(code=code)
                answer = f"With a {thing} that does this, start simple. {tips[p % 3]} {tips[(p + 1) % 3]} {CLOSINGS[n % len(CLOSINGS)]}"
                follow, reply = FOLLOW_UPS[n % len(FOLLOW_UPS)]
                key = [(Role.USER, first), (Role.ASSISTANT, answer), (Role.USER, follow), (Role.ASSISTANT, reply)]
                # the rest of the chat: other areas' general advice, before and after (no thing, no trouble)
                other = []
                for _ in range(rng.randint(*asides)):
                    area2, _, _, tips2 = AREAS[rng.choice([i for i in range(len(AREAS)) if i != a])]
                    other.append((Role.USER, rng.choice(ASIDES).format(area=area2)))
                    other.append((Role.ASSISTANT, " ".join(rng.sample(tips2, 2)) + " " + rng.choice(CLOSINGS)))
                cut = 2 * rng.randint(0, len(other) // 2)
                turns = other[:cut] + key + other[cut:]
                start = T0 + timedelta(hours=7 * n)
                messages, parent = [], None
                for i, (role, text) in enumerate(turns):
                    mid = f"{cid}-m{i}"
                    messages.append(Message(message_id=mid, parent_id=parent, role=role, text=text, created_at=start + timedelta(minutes=i),
                                            model="bench-model" if role == Role.ASSISTANT else None))
                    parent = mid
                conv = Conversation(source=Source.CHATGPT, platform=PLATFORM, conversation_id=cid, title=f"{area.capitalize()}: {thing}",
                                    created_at=start, updated_at=start + timedelta(minutes=len(turns)), model="bench-model",
                                    messages=messages, source_file="bench-retrieval.json")
                resolve_branches(conv)
                convs.append(conv)
                facts.append({"key": conv.key, "areaq": areaq, "thingq": thingq, "thing": thing, "troubleq": troubleq, "city": city,
                              "code": code, "text": " ".join(text for _, text in turns), "area": a})
                n += 1
    return convs, facts


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def make_queries(facts: list[dict[str, Any]], count: int, rng: random.Random) -> list[dict[str, Any]]:
    """One paraphrase per sampled conversation (the kinds in turn), checked to share at most one word with it."""
    chosen = rng.sample(facts, min(count, len(facts)))
    queries = []
    for i, fact in enumerate(chosen):
        kind = KINDS[i % len(KINDS)]
        place = {"with the city": f" in {fact['city']}", "with the code": f" {fact['code']}"}.get(kind, "")
        thing = f"{fact['thingq']} {fact['thing'].split()[-1]}" if kind == "with a word" else fact["thingq"]
        template = QUERIES[(i // len(KINDS)) % len(QUERIES)]
        text = template.format(areaq=fact["areaq"], thingq=thing, troubleq=fact["troubleq"], place=place)
        content = words(text) - _QUERY_STOP
        shared = content & words(fact["text"])
        if len(shared) > 1 or text.lower() in fact["text"].lower():
            raise SystemExit(f"query {text!r} shares {sorted(shared)} with its conversation: fix the lexicon")
        queries.append({"text": text, "key": fact["key"], "kind": kind, "shared": len(shared), "content": len(content)})
    return queries


# --------------------------------------------------------------------------- the long-conversation set
# One person's history: sessions of many turns, a few of whose user turns each say one thing worth
# remembering (a needle); every other turn talks around the same subjects, so a subject's words are in
# many sessions and only one turn answers a question.

SUBJECTS = [  # (as said, a paraphrase a question may use instead)
    ("boiler", "heating unit"), ("backpack", "rucksack"), ("laptop", "notebook computer"), ("lease", "rental contract"),
    ("passport", "travel document"), ("bicycle", "bike"), ("mortgage", "home loan"), ("dentist visit", "teeth checkup"),
    ("car insurance", "vehicle cover"), ("piano lessons", "keyboard classes"), ("garden shed", "tool hut"),
    ("wedding venue", "reception hall"), ("phone contract", "mobile plan"), ("kitchen renovation", "cooking area remodel"),
    ("gym membership", "fitness club pass"), ("tax return", "revenue filing"), ("dog food", "kibble for the puppy"),
    ("winter tyres", "cold season wheels"), ("sofa", "couch"), ("camera lens", "photo optics"), ("roof repair", "shingle fix"),
    ("school enrolment", "class registration"), ("coffee machine", "espresso maker"), ("solar panels", "rooftop PV"),
    ("visa application", "entry permit request"), ("hiking boots", "trail shoes"), ("pension plan", "retirement savings"),
    ("electric bill", "power invoice"), ("birthday party", "celebration for turning a year older"), ("washing machine", "laundry appliance"),
    ("fridge", "refrigerator"), ("driving test", "road exam"), ("health insurance", "medical cover"), ("guitar", "six-string"),
    ("apartment viewing", "flat tour"), ("car loan", "vehicle financing"), ("holiday rental", "vacation cottage"),
    ("eye exam", "optician check"), ("printer", "inkjet"), ("running shoes", "jogging trainers"), ("bookshelf", "shelving unit"),
    ("website domain", "web address registration"), ("savings account", "deposit fund"), ("concert tickets", "gig passes"),
    ("wedding suit", "formal outfit"), ("moving van", "removal truck"), ("vet appointment", "animal doctor visit"),
    ("home alarm", "burglar system"), ("dishwasher", "plate cleaner"), ("language course", "evening classes in Spanish"),
    ("chimney sweep", "flue cleaning"), ("parking permit", "resident street pass"), ("tablet", "touchscreen device"),
    ("freezer", "deep-freeze chest"), ("bathroom tiles", "shower wall ceramics"), ("water heater", "hot water tank"),
    ("train pass", "rail season ticket"), ("dining table", "eating table"), ("lawn mower", "grass cutter"), ("crib", "baby cot"),
]
ATTRIBUTES = ["serial number", "order reference", "model code", "account number", "booking code"]
# (as a turn says it, as a question asks it, the question's other words for it)
EVENTS = [("replaced", "replace", "swap out"), ("sold", "sell", "get rid of"), ("renewed", "renew", "extend"), ("booked", "book", "reserve"),
          ("repaired", "repair", "fix")]
CHOICES = ["go with the cheaper offer from {name}", "wait until after the summer", "cancel it and start over next year",
           "pay the extra for the premium version", "ask {name} to handle it for me", "split the cost with my brother"]
ROLES = [("technician", "engineer"), ("agent", "representative"), ("advisor", "consultant"), ("installer", "fitter")]
DEADLINES = [("deadline", "due date"), ("appointment", "slot"), ("delivery", "drop-off")]
FIRST = ["Marta", "Jonas", "Ines", "Tomasz", "Aiko", "Ruben", "Leila", "Pieter", "Sofia", "Bram", "Nadia", "Oskar", "Elif", "Dario",
         "Freya", "Kwame", "Lucia", "Matteo", "Ylva", "Hamid"]
LAST = ["Okafor", "Lindqvist", "Moreau", "Kowalski", "Tanaka", "Alvarez", "Haddad", "de Vries", "Rossi", "Novak", "Petrov",
        "Schmidt", "Yilmaz", "Costa", "Brennan", "Mensah", "Ferreira", "Conti", "Berg", "Karimi"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
MEMORY_KINDS = ("facts", "when did", "decisions", "names", "dates")
CHATTER = [  # a user's turn around a subject, and an assistant's generic answer
    ("Is a {s} something people usually regret skimping on?", "It depends on how often you use it; compare a few options first."),
    ("My neighbour keeps asking about my {s}, funny how everyone has an opinion.", "People love to share experiences; take what helps."),
    ("Remind me what to check before dealing with a {s}.", "Read the terms, keep receipts, and note who you spoke to and when."),
    ("I saw an advert about a {s} today and it made me think.", "Adverts are good at that; decide on what you actually need."),
    ("What are typical mistakes with a {s}?", "Rushing, not reading the small print, and forgetting follow-ups."),
    ("How much time should I set aside for the {s} stuff?", "Block an hour this week; it is usually less than it feels."),
]
GENERIC = [
    ("Can you help me plan my week?", "Sure: list the fixed things first, then the errands, then leave a buffer."),
    ("I'm tired today, any quick dinner ideas?", "A tray bake, an omelette, or pasta with whatever vegetables you have."),
    ("What's a good way to start journaling?", "Three lines each evening: what happened, what you felt, what's next."),
    ("Recommend a short novel for the train.", "Try something under 200 pages; a novella fits a commute well."),
]


def _day(rng: random.Random) -> tuple[str, str]:
    """A date as a turn says it and as a question may say it."""
    month, day = rng.randrange(12), rng.randint(1, 28)
    return f"{day} {MONTHS[month]} 2025", f"{MONTHS[month]} {day}"


def _needle(kind: str, subject: tuple[str, str], rng: random.Random, n: int) -> tuple[str, str, str]:
    """One remembered turn of a kind: (the user's turn, the assistant's answer, the question; the question uses the
    subject's paraphrase one time in two)."""
    said, other = subject
    asked = other if n % 2 else said
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if kind == "facts":
        attribute = ATTRIBUTES[n % len(ATTRIBUTES)]
        value = f"{chr(65 + rng.randrange(26))}{chr(65 + rng.randrange(26))}-{rng.randint(1000, 9999)}"
        return (f"Writing this down so I don't lose it: the {attribute} for the {said} is {value}.", "Noted, keep it somewhere safe too.",
                f"what is the {attribute} of my {asked}?")
    if kind == "when did":
        verb, ask, askq = EVENTS[n % len(EVENTS)]
        day, _ = _day(rng)
        return (f"Small update: I finally {verb} the {said} on {day}.", "Good to have that done.",
                f"when did I {askq if n % 4 >= 2 else ask} the {asked}?")
    if kind == "decisions":
        choice = CHOICES[n % len(CHOICES)].format(name=name)
        return (f"After going back and forth, I decided to {choice} for the {said}.", "That sounds like a sensible call.",
                f"what did I decide about the {asked}?")
    if kind == "names":
        role, roleq = ROLES[n % len(ROLES)]
        return (f"The {role} who looked after my {said} was {name}, really helpful.", "Nice when someone is helpful; worth remembering.",
                f"who was the {roleq if n % 4 >= 2 else role} for my {asked}?")
    deadline, deadlineq = DEADLINES[n % len(DEADLINES)]
    day, _ = _day(rng)
    return (f"Heads up for future me: the {said} {deadline} is {day}.", "I'd put a reminder a week before.",
            f"what is the date of the {asked} {deadlineq if n % 4 >= 2 else deadline}?")


def memory_corpus(rng: random.Random, sessions: int = 150, turns: tuple[int, int] = (15, 25),
                  ) -> tuple[list[Conversation], list[dict[str, Any]]]:
    """Sessions of `turns` exchanges each, each (subject, kind of question) remembered in one turn of one session
    (two a session with the defaults); per remembered turn a question: its text, kind, the session's key and the
    answering message's id."""
    pairs = [(subject, kind) for subject in SUBJECTS for kind in MEMORY_KINDS]
    rng.shuffle(pairs)
    per_session = -(-len(pairs) // sessions)
    convs, questions = [], []
    for s in range(sessions):
        cid = f"memory-{s:04d}"
        mine = pairs[s * per_session:(s + 1) * per_session]
        topic = list(dict.fromkeys([subject for subject, _ in mine] + rng.sample(SUBJECTS, 3)))
        exchanges: list[tuple[str, str, tuple[str, str] | None]] = []
        for _ in range(rng.randint(*turns)):
            if rng.random() < 0.75:
                user, answer = rng.choice(CHATTER)
                exchanges.append((user.format(s=rng.choice(SUBJECTS if rng.random() < 0.4 else topic)[0]), answer, None))
            else:
                user, answer = rng.choice(GENERIC)
                exchanges.append((user, answer, None))
        for subject, kind in mine:
            user, answer, question = _needle(kind, subject, rng, len(questions) + len(exchanges))
            exchanges.insert(rng.randint(0, len(exchanges)), (user, answer, (question, kind)))
        start = T0 + timedelta(days=2 * s, hours=s % 11)
        messages: list[Message] = []
        parent = None
        found = []
        for user, answer, asked in exchanges:
            for role, text in ((Role.USER, user), (Role.ASSISTANT, answer)):
                mid = f"{cid}-m{len(messages)}"
                messages.append(Message(message_id=mid, parent_id=parent, role=role, text=text,
                                        created_at=start + timedelta(minutes=3 * len(messages)),
                                        model="bench-model" if role == Role.ASSISTANT else None))
                parent = mid
                if asked and role == Role.USER:
                    found.append({"text": asked[0], "kind": asked[1], "message_id": mid})
        conv = Conversation(source=Source.CHATGPT, platform=PLATFORM, conversation_id=cid, title=f"Catching up {s}",
                            created_at=start, updated_at=messages[-1].created_at, model="bench-model",
                            messages=messages, source_file="bench-retrieval.json")
        resolve_branches(conv)
        convs.append(conv)
        questions += [{**q, "key": conv.key} for q in found]
    return convs, questions


def cleanup(driver: Any, database: str | None) -> None:
    with driver.session(database=database) as session:
        session.run(
            """
            MATCH (c:Conversation {source: $platform})
            CALL (c) {
              OPTIONAL MATCH (c)-[:HAS_MESSAGE]->(m:Message)
              OPTIONAL MATCH (c)-[:HAS_DOCUMENT]->(d:Document)
              OPTIONAL MATCH (d)-[:HAS_CHUNK]->(k:Chunk)
              DETACH DELETE k, d, m, c
            } IN TRANSACTIONS OF 50 ROWS
            """,
            platform=PLATFORM,
        ).consume()
        session.run(  # the --scale Documents, which have no Conversation
            """
            MATCH (d:Document {source: $platform})
            CALL (d) { OPTIONAL MATCH (d)-[:HAS_CHUNK]->(k:Chunk) DETACH DELETE k, d } IN TRANSACTIONS OF 100 ROWS
            """,
            platform=PLATFORM,
        ).consume()


def drop_chunks(driver: Any, database: str | None) -> None:
    """The benchmark's Documents and Chunks only (its Conversations stay): a documents stage from scratch."""
    with driver.session(database=database) as session:
        session.run(
            """
            MATCH (d:Document {source: $platform})
            CALL (d) { OPTIONAL MATCH (d)-[:HAS_CHUNK]->(k:Chunk) DETACH DELETE k, d } IN TRANSACTIONS OF 50 ROWS
            """,
            platform=PLATFORM,
        ).consume()


def documents_stage(driver: Any, database: str | None, root: Path, convs: list[Conversation], embedder: Any) -> tuple[float, DocumentsResult]:
    result = DocumentsResult()
    start = time.perf_counter()
    write_upload_documents(LocalObjectStore(root), driver, "2025-01-01", "bench-retrieval", convs, result, database=database, embedder=embedder)
    return time.perf_counter() - start, result


# what the table compares: (its name, search's mode, search's fusion); `hybrid (rrf)` is main's fusion before the blend
MODES = [("text", "text", None), ("vector", "vector", None), ("hybrid (rrf)", "hybrid", "rrf"), ("hybrid", "hybrid", "blend")]


def evaluate(driver: Any, database: str | None, queries: list[dict[str, Any]], mode: str, fusion: str | None, embedder: Any,
             filters: SearchFilters | None) -> dict[str, Any]:
    """Each query's rank of its conversation (None: not in the 10 hits), whether one of the first 5 hits holds its
    answering message (queries that name one), and each query's seconds."""
    ranks: list[int | None] = []
    turns: list[bool] = []
    seconds: list[float] = []
    for q in queries:
        start = time.perf_counter()
        hits = search(driver, q["text"], k=10, mode=mode, embedder=embedder, filters=filters, database=database,
                      **({"fusion": fusion} if fusion else {}))
        seconds.append(time.perf_counter() - start)
        keys = [h.conversation["key"] for h in hits]
        ranks.append(keys.index(q["key"]) + 1 if q["key"] in keys else None)
        if "message_id" in q:
            turns.append(any(q["message_id"] in h.message_ids for h in hits[:5]))
    return {"ranks": ranks, "turns": turns, "seconds": seconds}


def scores(ranks: list[int | None], turns: list[bool] | None = None) -> dict[str, float]:
    """recall@1/5/10, nDCG@10 (one relevant conversation: 1 / log2(1 + rank)), MRR@10, the answering turn in the top 5."""
    n = len(ranks)
    out = {f"R@{c}": sum(r is not None and r <= c for r in ranks) / n for c in (1, 5, 10)}
    out["nDCG@10"] = statistics.fmean(1.0 / math.log2(1 + r) if r else 0.0 for r in ranks)
    out["MRR@10"] = statistics.fmean(1.0 / r if r else 0.0 for r in ranks)
    if turns:
        out["turn@5"] = sum(turns) / len(turns)
    return out


def report(title: str, queries: list[dict[str, Any]], kinds: Sequence[str], table: dict[str, dict[str, Any]]) -> None:
    """The table of every mode, all queries then per kind, as Markdown; then where hybrid is below the better single mode."""
    columns = ["R@1", "R@5", "R@10", "nDCG@10"] + (["turn@5"] if table["text"]["turns"] else [])
    print(f"\n{title}\n\n| questions | mode | {' | '.join(columns)} |\n| --- | --- |{' ---: |' * len(columns)}")
    worse = []
    for kind in ("all", *kinds):
        chosen = [i for i, q in enumerate(queries) if kind in ("all", q["kind"])]
        row_of = {}
        for name, *_ in MODES:
            row = table[name]
            row_of[name] = scores([row["ranks"][i] for i in chosen], [row["turns"][i] for i in chosen] if row["turns"] else None)
            cells = " | ".join(f"{row_of[name][c]:.3f}" for c in columns)
            print(f"| {kind + f' ({len(chosen)})' if name == 'text' else ''} | {name} | {cells} |")
        for c in ("R@1", "R@5"):
            better = max(row_of["text"][c], row_of["vector"][c])
            if row_of["hybrid"][c] < better:
                worse.append(f"{kind} {c}: hybrid {row_of['hybrid'][c]:.3f} < {better:.3f}")
    print("hybrid at least the better single mode at R@1 and R@5 for every kind" if not worse else "hybrid below: " + "; ".join(worse))


def latency(table: dict[str, dict[str, Any]]) -> str:
    return ", ".join(f"{name} p50 {statistics.median(row['seconds']) * 1000:.0f} ms p95 "
                     f"{statistics.quantiles(row['seconds'], n=20)[-1] * 1000:.0f} ms" for name, row in table.items())


def model_throughput(embedder: Any, facts: list[dict[str, Any]], n: int = 200, size: int = 1800) -> float:
    """Chunks of `size` characters per second through the model (texts cut from the corpus, all distinct); the
    models side by side, on the pipeline's chunks: bench/embedders.py."""
    rng = random.Random(3)
    texts = []
    for i in range(n):
        parts = rng.sample(facts, 12)
        texts.append((f"{i} " + " ".join(p["text"] for p in parts))[:size])
    embedder(texts[:10])  # warm
    start = time.perf_counter()
    embedder(texts)
    return n / (time.perf_counter() - start)


def scale_latency(driver: Any, database: str | None, embedder: Any, facts: list[dict[str, Any]], queries: list[dict[str, Any]],
                  sizes: Sequence[int], batch: int = 5000, reuse: bool = False) -> None:
    """Search latency at `sizes` chunks: Documents of 10 chunks under the benchmark's platform, written straight
    into the graph in batches of `batch` (one UNWIND a batch; texts of 1 to 6 sentences of the topics' chats;
    vectors of 2,000 of them embedded by the model, each reused with a little noise so that no two are equal,
    stored as the documents stage stores them, float32 by `db.create.setNodeVectorProperty`), then the first 100
    queries in each mode, unfiltered, after one query of each mode to warm up. Each size is added to the last;
    the load rate is printed as it goes. The vector index is dropped while a size is written and built again
    after it (a bulk build beats an update a chunk). `reuse`: the benchmark's chunks already in the graph (a
    `--keep` run's) count as written, so a size they reach is searched as it is (its index built only if
    missing) and a smaller one is left out."""
    import numpy as np

    from chatetl.graph.chunk_search import chunk_indexes
    from chatetl.graph.chunks import VECTOR_INDEX, ensure_chunk_schema, vector_index_statement
    from chatetl.graph.schema import ensure_schema

    rng = random.Random(5)
    pool = [s.strip() + "." for f in facts for s in f["text"].split(".") if len(s.strip()) > 20]
    texts = [" ".join(rng.sample(pool, rng.randint(1, 6))) for _ in range(2000)]
    base = np.asarray(embedder(texts), dtype=np.float32)
    noise = np.random.default_rng(5)
    ensure_schema(driver, database)  # (the Document key's constraint: MERGE finds a Document by its index)
    written = 0
    if reuse:
        records, _, _ = driver.execute_query("MATCH (c:Chunk {source: $platform}) RETURN count(c) AS n", platform=PLATFORM,
                                             database_=database)
        written = records[0]["n"]
        print(f"reusing the {written:,} chunks of the benchmark in the graph", flush=True)
    for size in sizes:
        if written > size:
            print(f"{size:,} chunks: left out, the graph holds {written:,} of the benchmark's", flush=True)
            continue
        start = time.perf_counter()
        first = written
        if written < size or not chunk_indexes(driver, database)["vector_dimensions"]:
            driver.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=database)
            ensure_chunk_schema(driver, database)
        while written < size:
            n = min(batch, size - written)
            vectors = base[[(written + j) % len(base) for j in range(n)]] + noise.normal(0, 0.02, (n, base.shape[1])).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            rows = [{"doc": f"{PLATFORM}:scale-{(written + j) // 10}", "id": f"{PLATFORM}:scale-{(written + j) // 10}#{(written + j) % 10}",
                     "position": (written + j) % 10, "text": texts[(written + j) % len(texts)], "embedding": vectors[j].tolist()}
                    for j in range(n)]
            driver.execute_query(
                """
                UNWIND $rows AS row
                MERGE (d:Document {key: row.doc}) ON CREATE SET d.source = $platform, d.title = row.doc, d.created_at = '2025-01-01'
                CREATE (d)-[:HAS_CHUNK]->(c:Chunk {id: row.id, text: row.text, position: row.position, char_start: 0,
                                                  char_end: size(row.text), message_ids: [], source: $platform})
                WITH c, row
                CALL db.create.setNodeVectorProperty(c, 'embedding', row.embedding)
                """, rows=rows, platform=PLATFORM, database_=database)
            written += n
            if written % 100_000 < n:
                print(f"  {written:,} chunks written, {(written - first) / (time.perf_counter() - start):,.0f} chunks/s", flush=True)
        loaded = time.perf_counter() - start
        if not chunk_indexes(driver, database)["vector_dimensions"]:
            driver.execute_query(vector_index_statement(base.shape[1]), database_=database)
        driver.execute_query("CALL db.awaitIndexes(7200)", database_=database)
        indexed = time.perf_counter() - start
        records, _, _ = driver.execute_query("MATCH (c:Chunk) RETURN count(c) AS n", database_=database)
        chosen = queries[:100]
        for _, mode, _ in MODES:
            search(driver, "warm up", mode=mode, embedder=embedder, database=database)
        table = {label: evaluate(driver, database, chosen, mode, fusion, embedder, None)
                 for label, mode, fusion in MODES if label != "hybrid (rrf)"}
        rate = f", {(written - first) / loaded:,.0f} chunks/s" if written > first else ""
        print(f"{records[0]['n']:,} chunks in the graph ({loaded:.0f} s to write {written - first:,}{rate}, indexes online after "
              f"{indexed:.0f} s): {latency(table)}", flush=True)


def run_set(driver: Any, database: str | None, name: str, convs: list[Conversation], queries: list[dict[str, Any]],
            kinds: Sequence[str], embedder: Any, timings: bool) -> None:
    """One question set: its conversations loaded (graph, then the documents stage with the model), every query in every mode."""
    cleanup(driver, database)
    start = time.perf_counter()
    load_conversations(driver, convs, database=database)
    print(f"\n== {name}: {len(convs)} conversations, {sum(len(c.messages) for c in convs)} messages; graph load "
          f"{time.perf_counter() - start:.2f} s", flush=True)
    with tempfile.TemporaryDirectory(prefix="chatetl-bench-retrieval-") as tmp:
        if timings:
            off, res_off = documents_stage(driver, database, Path(tmp, "off"), convs, None)
            drop_chunks(driver, database)
        on, res_on = documents_stage(driver, database, Path(tmp, "on"), convs, embedder)
        if timings:
            again, res_again = documents_stage(driver, database, Path(tmp, "on"), convs, embedder)
            print(f"documents stage, {res_off.chunks} chunks: without embeddings {off:.2f} s ({res_off.chunks / off:,.0f} chunks/s); "
                  f"with embeddings {on:.2f} s ({res_on.chunks / on:,.0f} chunks/s; the model {res_on.embedding_seconds:.2f} s for "
                  f"{res_on.embedded} chunks); unchanged rerun {again:.2f} s, {res_again.embedded} embedded, "
                  f"{res_again.embeddings_reused} reused")
        else:
            print(f"documents stage: {res_on.chunks} chunks in {on:.2f} s")
    records, _, _ = driver.execute_query("MATCH (c:Chunk) WHERE NOT c.source = $p RETURN count(c) AS n", p=PLATFORM, database_=database)
    filters = None
    if records[0]["n"]:
        filters = SearchFilters(platform=PLATFORM)
        print(f"note: the database holds {records[0]['n']} other chunks: searches filtered to platform {PLATFORM}")
    search(driver, "warm up", mode="hybrid", embedder=embedder, filters=filters, database=database)
    table = {label: evaluate(driver, database, queries, mode, fusion, embedder, filters) for label, mode, fusion in MODES}
    report(f"{name}, {len(queries)} questions, e.g. {queries[0]['text']!r}", queries, kinds, table)
    print(f"one query, one client (its embedding included): {latency(table)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=["topics", "memory", "both"], default="both", help="which question set")
    parser.add_argument("--queries", type=int, default=300, help="questions of the topics set")
    parser.add_argument("--sessions", type=int, default=150, help="sessions of the memory set (its 300 questions among them)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--asides", default="3,7", help="MIN,MAX exchanges on other subjects in each chat of the topics set")
    parser.add_argument("--scale", default="", help="search latency at these chunk counts instead (e.g. 10000,100000)")
    parser.add_argument("--keep", action="store_true", help="leave the benchmark's nodes in the graph")
    parser.add_argument("--reuse", action="store_true",
                        help="--scale: search the benchmark's chunks a --keep run left in the graph, writing only what a size lacks")
    parser.add_argument("--model", default=None, help="the embedder, as CHATETL_EMBEDDER names it (default: that setting)")
    parser.add_argument("--no-highlight", action="store_true",
                        help="hits without the query's words get no nearest sentence (the ranks are the same; a slow model's run ends)")
    args = parser.parse_args()
    if args.no_highlight:
        chatetl.search._nearest_sentences = lambda *_: None  # after the ranking: the tables do not change
    ensure_local_env()
    conf = neo4j_settings()
    database = conf["database"] or None
    embedder = load_embedder(args.model)
    if embedder is None:
        raise SystemExit("embeddings are off (CHATETL_EMBEDDINGS): nothing to compare")
    before = resident_mib()
    embedder(["load the model"])
    print(f"Neo4j {conf['uri']} (database {database}); the model {embedder.name}, {embedder.dimensions} dimensions, "
          f"{resident_mib() - before:,.0f} MiB once loaded")
    driver = open_driver()
    try:
        if args.scale:
            rng = random.Random(args.seed)
            _, facts = corpus(rng, (3, 7))
            if not args.reuse:
                cleanup(driver, database)
            scale_latency(driver, database, embedder, facts, make_queries(facts, 100, rng), [int(x) for x in args.scale.split(",")],
                          reuse=args.reuse)
            return
        if args.set in ("topics", "both"):
            rng = random.Random(args.seed)
            low, high = (int(x) for x in args.asides.split(","))
            convs, facts = corpus(rng, (low, high))
            queries = make_queries(facts, args.queries, rng)
            print(f"topics: {len(convs)} conversations on distinct (area, thing, trouble) topics with {low} to {high} exchanges on "
                  f"other subjects each; words a query shares with its conversation: "
                  f"{statistics.fmean(q['shared'] for q in queries):.2f} on average, at most {max(q['shared'] for q in queries)}, "
                  f"of {statistics.fmean(q['content'] for q in queries):.1f} words (stop words aside)")
            run_set(driver, database, "topics", convs, queries, KINDS, embedder, timings=True)
            print(f"model alone ({embedder.name}): {model_throughput(embedder, facts):,.0f} chunks of 1,800 characters per second")
        if args.set in ("memory", "both"):
            convs, questions = memory_corpus(random.Random(args.seed), sessions=args.sessions)
            run_set(driver, database, "memory", convs, questions, MEMORY_KINDS, embedder, timings=False)
    finally:
        if not args.keep:
            cleanup(driver, database)
        driver.close()
    print(f"peak memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")


def resident_mib() -> float:
    """This process's resident memory now (Linux's /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


if __name__ == "__main__":
    main()
