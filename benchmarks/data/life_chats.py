"""Long multi-session chats between two people, with questions whose answers sit in known turns.

Invariant: a pure function of its seed — `histories(seed, count)` returns the
same sessions, turns, dates and questions on every machine and Python (no set
or dict order of strings is relied on, only `random.Random(seed)`); nothing is
downloaded. Every question lists its evidence as groups of turn indexes: a
group is one piece of information, found when any turn of the group is (a
fact said once, then restated later in other words, is one group of two
turns); a question needs every group. Questions are phrased the way someone
asks later, not with the evidence's words, and name the person they ask
about; the other kinds of turns (greetings, thanks, reactions that echo the
news, everyday chatter) are what such a history is mostly made of.

The shape follows public long-conversation sets: two friends or relatives
chat over 20-30 dated sessions about their lives, with recurring people
around them; one of the two is stored as the user, the other as the
assistant, as an imported chat log would be. Question kinds:

- single: one fact, asked in other words ("What instrument is Ana learning?"
  for "I signed up for cello lessons ...").
- multi: two or three turns from different sessions (a relative introduced
  once and their news later; activities done with someone over the year).
- temporal: when something happened, from a turn that says "last Saturday"
  in a dated session; or which of two things came first.
- update: a fact that changed (a new job, a move); the evidence is the
  newest statement, the older one is a distractor.
- repeated: a question one of them asked in an earlier session, asked again
  word for word; the evidence is the answer, not the earlier question.
- identifier: one of them is a developer; a file, port, flag or function
  named in a question, sometimes in backticks.
- none: about something of theirs never mentioned (no evidence; measures
  what is recalled for nothing).
- unrelated: a topic no history touches, in words none of them uses.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

KINDS = ("single", "multi", "temporal", "update", "repeated", "identifier")


@dataclass
class Turn:
    speaker: int  # 0 (stored as the user) or 1 (stored as the assistant)
    text: str
    label: str  # "news" (something one tells; evidence of some question), "echo" (a reaction repeating the
    # news), "smalltalk" (greetings, thanks, reactions), "chatter", "detail", "question"


@dataclass
class Session:
    date: datetime
    turns: list[Turn] = field(default_factory=list)


@dataclass
class Question:
    text: str
    kind: str
    evidence: list[list[int]]  # groups of turn indexes (the history's turns in order, from 0)
    answer: str
    about: str  # the name of the person the question is about


@dataclass
class History:
    seed: int
    names: tuple[str, str]
    others: list[str]
    sessions: list[Session]
    questions: list[Question]

    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]


# ---- vocabulary ------------------------------------------------------------------------------

FIRST = (
    "Caroline Melanie Nate Joanna Priya Marco Deborah Evan Tomas Aisha Jolene Gina Jon Maria John Sam Audrey "
    "Andrew James Tim Calvin Dave Rosa Hiro Leila Oskar Nadia Felix Imani Bruno Chloe Dmitri Esther Farid Greta "
    "Hugo Ines Jasper Kemal Lucia Mateo Noor Olga Pavel Quinn Rania Soren Tess Umar Vera Wes Yara Zoe"
).split()
RELATIONS = ["sister", "brother", "cousin", "neighbor", "coworker", "roommate", "aunt", "best friend"]

INSTRUMENTS = ["violin", "cello", "ukulele", "piano", "saxophone", "drums", "banjo", "flute", "trumpet", "harp"]
PETS = [("kitten", "cat"), ("puppy", "dog"), ("rabbit", "rabbit"), ("parrot", "bird"), ("hamster", "hamster"),
        ("tortoise", "tortoise"), ("beagle", "dog"), ("tabby", "cat")]
PET_NAMES = ["Oliver", "Biscuit", "Luna", "Pepper", "Mochi", "Ziggy", "Clementine", "Pickles", "Nova", "Waffles",
             "Juniper", "Otis", "Sprocket", "Maple"]
CITIES = ["Denver", "Portland", "Austin", "Pittsburgh", "Minneapolis", "Tucson", "Raleigh", "Boise", "Madison",
          "Sacramento", "Halifax", "Edinburgh", "Leeds", "Lyon", "Porto", "Ghent", "Tampere", "Bologna"]
JOBS = [("nurse", "Mercy General"), ("graphic designer", "Bright Pixel Studio"), ("teacher", "Lincoln Middle School"),
        ("accountant", "Hale & Partners"), ("barista", "Daily Grind"), ("paralegal", "Morrow Law"),
        ("lab technician", "Genvia Labs"), ("social worker", "the county family services"),
        ("electrician", "Volt Brothers"), ("librarian", "the Eastside public library"),
        ("sous chef", "Olive & Thyme"), ("physical therapist", "Motion Clinic")]
TRIPS = [("Kyoto", "Japan", "the bamboo forest at dawn"), ("Lisbon", "Portugal", "the old tram up to the castle"),
         ("Reykjavik", "Iceland", "the northern lights over the harbor"), ("Oaxaca", "Mexico", "the night market"),
         ("Cape Town", "South Africa", "the penguins at Boulders Beach"), ("Hanoi", "Vietnam", "the street food tour"),
         ("Cusco", "Peru", "the hike up to the ruins"), ("Marrakesh", "Morocco", "the spice souks"),
         ("Tromso", "Norway", "the dog sledding"), ("Queenstown", "New Zealand", "the bungee jump")]
RACES = [("half marathon", "race"), ("10k charity run", "race"), ("sprint triathlon", "triathlon"),
         ("5k color run", "race"), ("100-mile charity bike ride", "ride")]
CAUSES = ["the children's hospital", "the animal shelter", "cancer research", "the local food bank",
          "suicide prevention", "a literacy nonprofit", "the women's shelter"]
BOOKS = [("The Salt Orchard", "Mira Kessel"), ("Nine Winters", "Tobias Arn"), ("A Map of Quiet Things", "June Okafor"),
         ("The Lighthouse Ledger", "Paul Versh"), ("Glass Harbor", "Ines Doyle"), ("Under the Copper Moon", "Ravi Sen"),
         ("The Last Cartographer", "Elena Brisk"), ("Small Gods of Tuesday", "Kit Marlowe-Hart")]
DISLIKES = ["olives", "cilantro", "blue cheese", "mushrooms", "licorice", "pickled herring", "oysters", "beets"]
LOVES = ["ramen", "tacos al pastor", "lemon cake", "dumplings", "pad thai", "shakshuka", "pho", "paella"]
INJURIES = [("sprained my ankle", "playing basketball", "ankle"), ("pulled a muscle in my back", "moving a couch", "back"),
            ("broke my wrist", "skateboarding with my nephew", "wrist"), ("twisted my knee", "on a ski trip", "knee"),
            ("cracked a rib", "falling off a ladder", "rib")]
VEHICLES = ["a used Subaru Outback", "an old Volkswagen camper van", "a cargo e-bike", "a red Mazda hatchback",
            "a secondhand Prius", "a vintage Vespa scooter"]
EXAMS = [("the bar exam", "law"), ("my CPA exam", "accounting"), ("the nursing board exam", "nursing"),
         ("my driving test", "driving"), ("the JLPT N3", "Japanese"), ("my sommelier certification", "wine")]
ACTIVITIES = [("hiked the Eagle Ridge trail", "hiking"), ("went kayaking on Lake Maren", "kayaking"),
              ("camped two nights at Pine Hollow", "camping"), ("took a pottery class", "pottery"),
              ("did a salsa dancing workshop", "dancing"), ("went bouldering at the climbing gym", "climbing"),
              ("volunteered at the soup kitchen", "volunteering"), ("baked sourdough all afternoon", "baking"),
              ("went to a jazz night at the Blue Room", "jazz"), ("planted tomatoes in the community garden", "gardening")]
SIGNS = ["a sunflower", "a tiny fox", "a compass rose", "a crescent moon", "a paper crane", "an anchor"]

# developer facts: (statement, question, answer) with {slots}
DEV = [
    ("I moved the staging database to port {port} behind pgbouncer, finally.",
     "Which port is the staging db on now?", "{port}"),
    ("Found the flaky test: tests/test_{mod}.py had a race in the fixture that reuses the temp dir.",
     "What was wrong in `tests/test_{mod}.py`?", "a race in the fixture that reuses the temp dir"),
    ("I renamed load_{thing}_rows to fetch_{thing}_batch and the whole team's branches broke.",
     "what did load_{thing}_rows become?", "fetch_{thing}_batch"),
    ("Deploys are now gated on the feature flag {flag}, so nothing ships if it's off.",
     "`{flag}`", "deploys are gated on it"),
    ("The nginx config at /etc/nginx/sites-enabled/{site}.conf caps uploads at {mb} MB now.",
     "What's the upload cap in {site}.conf?", "{mb} MB"),
    ("We pinned {lib} to {ver} because the next release broke our date parsing.",
     "Why is {lib} pinned?", "the next release broke date parsing"),
    ("The cron job `{job}` runs at 3:15 every night and emails the report to finance.",
     "When does {job} run?", "3:15 every night"),
]
DEV_SLOTS = {
    "port": ["6543", "5433", "6432", "7001", "5544"], "mod": ["billing", "invoices", "auth_tokens", "exports", "search"],
    "thing": ["invoice", "customer", "order", "shipment"], "flag": ["checkout_v2_enabled", "fast_path_on", "new_ledger"],
    "site": ["shop", "portal", "api"], "mb": ["25", "50", "100"], "lib": ["pendulum", "arrow", "dateparser"],
    "ver": ["2.1.2", "1.3.0", "0.9.4"], "job": ["nightly_ledger_export", "sync_refunds", "rebuild_search_index"],
}

UNRELATED = [  # topics no history touches: nothing should be recalled for them
    "How do I roll back a helm release on kubernetes?", "What's a good mortgage refinance rate right now?",
    "Explain photosynthesis in simple terms", "Which carburetor jets suit a 1970s motorcycle engine?",
    "How do volcanoes form under the ocean?", "Summarize the causes of the Peloponnesian war",
    "What is the derivative of arctangent?", "Recommend a torque wrench for bicycle carbon frames",
]
GREET = ["Hey {o}! How've you been?", "Hi {o}, long time no talk!", "Good morning {o}!", "Hey {o}, got a minute?",
         "Hi {o}! Hope your week is going well.", "{o}! It's been ages.", "Hey hey {o}, what's new?"]
GREET_BACK = ["Hey {p}! Good to hear from you.", "Hi {p}! Doing well, thanks for asking.", "Morning, {p}!",
              "Always, {p}. What's up?", "{p}! So good to hear from you.", "Hi {p}, I was just thinking about you!"]
BYE = ["Gotta run, bye {o}!", "Talk soon, {o}! Take care.", "Okay, I need to head out. Bye {o}!", "Night, {o}!",
       "Catch you later, {o}!", "Have a great week, {o}!"]
BYE_BACK = ["Bye {p}!", "Take care, {p}!", "Talk soon!", "See ya, {p}!", "You too, {p}. Bye!", "Night night!"]
THANKS = ["Thanks, {o}!", "Thanks so much, {o}, that means a lot.", "Appreciate it, {o}!", "Aww, thank you {o}!",
          "Thank you, {o}. Really.", "Haha thanks {o}!"]
CHEER = ["Wow, {p}, that's amazing!", "No way! Congrats, {p}!", "That's so cool, {p}!", "Love that for you, {p}.",
         "Haha, that's awesome, {p}!", "Oh wow. Go you, {p}!", "That sounds lovely, {p}."]
SORRY = ["Oh no, {p}! I'm so sorry.", "Ugh, that's rough, {p}. Hope it heals fast.", "Yikes! Take it easy, {p}.",
         "Oh {p}, that sounds painful."]
FILLERS = ["Haha, totally.", "That's so true!", "Right?!", "Ha, I know the feeling.", "Same here honestly.",
           "Oh for sure.", "Lol yes.", "Exactly!", "Aww.", "Mm-hmm, makes sense."]
FOLLOW_UPS = ["How's it going so far?", "How did that feel?", "Was it hard?", "What made you decide to do it?",
              "Did you take pictures?", "Are you going to keep at it?", "How are you feeling about it?"]
DETAILS = ["Honestly better than I expected, I keep surprising myself.", "Slow at first, but it's getting easier every week.",
           "A bit nerve-wracking, but worth it.", "I've been wanting to for years, so it felt like time.",
           "Tons! I'll send you a few later.", "Definitely, I'm hooked now.", "Mostly excited, a little nervous."]
CHATTER = [
    "Work has been hectic, we're prepping for a big audit next month.",
    "The weather here flipped from sunny to pouring rain in an hour today.",
    "I binge-watched an entire baking show on Sunday and regret nothing.",
    "My landlord finally fixed the leaky faucet after three emails.",
    "I've been trying to drink more water, the app keeps nagging me.",
    "Traffic on the way home was brutal, a truck broke down on the bridge.",
    "I reorganized my whole closet this weekend, found a jacket I forgot I owned.",
    "Still trying to get used to waking up earlier, coffee is doing the heavy lifting.",
    "We had a team lunch today, the new Thai place downstairs is actually good.",
    "My phone screen cracked again, I really need a better case.",
    "I tried meditating before bed, fell asleep in five minutes.",
    "The neighbors are renovating and the drilling starts at 7 every morning.",
    "I've been listening to a podcast about old shipwrecks, weirdly relaxing.",
    "Grocery prices are wild lately, I spent twice what I planned.",
    "I finally cleaned out my inbox, down to twelve emails.",
    "The power went out for two hours last night, we played cards by candlelight.",
    "I signed up for a newsletter about houseplants, now I want all of them.",
    "My commute is shorter since they added the express bus.",
    "I'm thinking about repainting the living room, maybe a soft green.",
    "Had a long call with my mom, she's planning a garden party.",
    "I started journaling again, just a few lines every night.",
    "Our team got a new manager this week, seems nice so far.",
    "I made soup from whatever was in the fridge and it was surprisingly good.",
    "The gym was packed tonight, everyone's New Year energy is still going.",
]
PEOPLE_CHATTER = [
    "{r} and I grabbed coffee, we talked about wedding plans for an hour.",
    "{r} texted me a photo of a giant pumpkin from the farmers market.",
    "I helped {r} move a dresser up three flights of stairs, my arms are dead.",
    "{r} is obsessed with a new board game, we played until midnight.",
    "Had dinner at {r}'s place, the lasagna was incredible.",
    "{r} keeps sending me memes at 2am, I don't know when they sleep.",
    "{r} lent me a stack of old records, some of them are really scratched.",
    "I ran into {r} at the grocery store, we ended up chatting in the cereal aisle.",
    "{r} wants to start a book club, I said I'd think about it.",
    "{r} and I watched the game at the sports bar, the crowd was loud.",
    "Went to {r}'s birthday party, there was karaoke and far too much cake.",
    "{r} is training for something, always out jogging at dawn.",
]
TOPIC_CHATTER = [
    "Work has been {busy}, we're prepping for {work_thing}.",
    "I've been watching {show}, it's {opinion}.",
    "The weather here is {weather} again, {weather_effect}.",
    "I cooked {dish} for dinner and {dish_result}.",
    "Thinking about {plan} this {season}, nothing booked yet.",
    "My {device} died this week, {device_effect}.",
]
TOPIC_SLOTS = {
    "busy": ["hectic", "slow", "chaotic", "surprisingly calm"],
    "work_thing": ["a big audit", "a product launch", "the quarterly review", "a client visit", "inventory week"],
    "show": ["a documentary about deep sea creatures", "an old detective series", "a reality show about tiny houses",
             "a cooking competition", "a period drama everyone talks about"],
    "opinion": ["weirdly addictive", "kind of slow but cozy", "so bad it's good", "better than I expected"],
    "weather": ["grey and drizzly", "ridiculously hot", "windy", "freezing", "foggy every morning"],
    "weather_effect": ["I haven't seen the sun in days", "the fan runs all night", "my umbrella flipped inside out",
                       "the pipes almost froze"],
    "dish": ["a big pot of chili", "homemade pizza", "a lentil curry", "stuffed peppers", "a very ambitious risotto"],
    "dish_result": ["it was gone in ten minutes", "burned the bottom, oops", "there are leftovers for days",
                    "everyone asked for the recipe"],
    "plan": ["a weekend at the coast", "visiting my parents", "a cabin trip", "a road trip up north", "a staycation"],
    "season": ["summer", "fall", "winter", "spring"],
    "device": ["laptop", "phone", "washing machine", "coffee maker", "car battery"],
    "device_effect": ["perfect timing as always", "I'm living like it's 1995", "so now I'm shopping around",
                      "the repair guy comes Thursday"],
}
REACT_TO_CHATTER = ["Ha, classic.", "Ugh, I feel that.", "Sounds like a week!", "Oh nice, that's something.",
                    "Lol, relatable.", "Hang in there!"]


# ---- building ----------------------------------------------------------------------------------

class _Builder:
    """One history: persons, a schedule of sessions, and the facts placed into them."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        names = self.rng.sample(FIRST, 8)
        self.names = (names[0], names[1])
        self.others = names[2:]
        count = self.rng.randint(22, 30)
        start = datetime(2023, 1, 2, 9, 0) + timedelta(days=self.rng.randint(0, 200))
        dates, day = [], start
        for _ in range(count):
            day += timedelta(days=self.rng.randint(4, 19), hours=self.rng.randint(-3, 10), minutes=self.rng.randint(0, 59))
            dates.append(day)
        self.dates = dates
        # per session: blocks of turns, each block [(speaker, text, label, key)]; keys name evidence turns
        self.blocks: list[list[list[tuple[int, str, str, str]]]] = [[] for _ in dates]
        self.questions: list[tuple[str, str, list[list[str]], str, str]] = []  # text, kind, groups of keys, answer, about
        self.dev = self.rng.randrange(3) == 0  # one history in three has a developer among the two
        self._keys = 0

    def key(self) -> str:
        self._keys += 1
        return f"k{self._keys}"

    def pick(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def news(self, session: int, who: int, text: str, *, tone: str = "good", echo: str = "") -> str:
        """A block where `who` tells something (the evidence turn), with the other's reaction and the usual
        follow-ups; returns the evidence key."""
        p, o = self.names[who], self.names[1 - who]
        k = self.key()
        block = [(who, text, "news", k)]
        if echo and self.rng.random() < 0.5:
            block.append((1 - who, echo.format(p=p, o=o), "echo", ""))
        else:
            block.append((1 - who, self.pick(CHEER if tone == "good" else SORRY).format(p=p), "smalltalk", ""))
        if self.rng.random() < 0.4:
            block.append((1 - who, self.pick(FOLLOW_UPS), "smalltalk", ""))
            block.append((who, self.pick(DETAILS), "detail", ""))
        if self.rng.random() < 0.3:
            block.append((who, self.pick(THANKS).format(o=o), "smalltalk", ""))
        self.blocks[session].append(block)
        return k

    def phrase(self, close: list[str], far: list[str]) -> str:
        """A question sharing a word or two with its evidence (as most do), or none but the name."""
        return self.pick(close if self.rng.random() < 0.5 else far)

    def ask(self, text: str, kind: str, groups: list[list[str]], answer: str, about: int) -> None:
        self.questions.append((text, kind, groups, answer, self.names[about]))

    def sessions_between(self, lo: float, hi: float) -> int:
        n = len(self.dates)
        return self.rng.randint(int(n * lo), max(int(n * lo), int(n * hi) - 1))

    # ---- facts -------------------------------------------------------------------------------

    def instrument(self, who: int) -> None:
        x, p = self.pick(INSTRUMENTS), self.names[who]
        s = self.sessions_between(0.0, 0.7)
        say = self.pick([f"I finally signed up for {x} lessons at the community music school, Tuesday evenings.",
                         f"Guess what, I bought a {x} and found a teacher! First lesson was today.",
                         f"I've started learning the {x}. My fingers hurt but I love it."])
        k = self.news(s, who, say, echo=f"A {x}? I always wanted to learn that, {{p}}!")
        groups = [[k]]
        if self.rng.random() < 0.5:  # restated later, in other words
            later = self.rng.randint(s + 1, len(self.dates) - 1) if s + 1 < len(self.dates) else s
            k2 = self.news(later, who, self.pick([f"My {x} teacher says I'm ready for a small recital in the spring!",
                                                  f"Practiced {x} for an hour tonight, the neighbors must love me."]))
            groups = [[k, k2]]
        self.ask(self.phrase([f"What instrument is {p} learning?", f"Which instrument did {p} start lessons on?"],
                             [f"Which instrument did {p} take up?", f"What kind of music is {p} studying?"]),
                 "single", groups, x, who)

    def pet(self, who: int) -> None:
        (young, kind), name, p = self.pick(PETS), self.pick(PET_NAMES), self.names[who]
        s = self.sessions_between(0.0, 0.6)
        k = self.news(s, who, self.pick([f"We adopted a {young} from the shelter this weekend! We named her {name}.",
                                         f"Meet the newest family member: a little {young} called {name}."]),
                      echo=f"{name} is such a cute name for a {young}!")
        later = min(len(self.dates) - 1, s + self.rng.randint(2, 8))
        k2 = self.news(later, who, self.pick([f"{name} chewed through my charger cable this morning, unbelievable.",
                                              f"{name} has figured out how to open the pantry door."]), tone="bad",
                       echo=f"Haha, {name} is a menace!")
        self.ask(self.phrase([f"What did {p} name the {young} from the shelter?"],
                             [f"What is the name of {p}'s {kind}?", f"What's {p}'s new {kind} called?"]),
                 "single", [[k, k2]], name, who)
        self.ask(self.phrase([f"What has {name} been getting into?"], [f"What trouble has {p}'s pet caused?"]),
                 "single", [[k2]], "a charger cable / the pantry", who)

    def job(self, who: int) -> None:
        (j1, c1), (j2, c2) = self.rng.sample(JOBS, 2)
        p = self.names[who]
        s1 = self.sessions_between(0.0, 0.3)
        s2 = self.sessions_between(0.55, 0.95)
        k1 = self.news(s1, who, f"Work update: I'm still a {j1} at {c1}, the hours are long but the team is great.",
                       echo=f"A {j1} at {c1}, right? Hang in there, {{p}}.")
        k2 = self.news(s2, who, self.pick([f"Big news: I handed in my notice at {c1}. I'm starting as a {j2} at {c2} next month!",
                                           f"I got the job offer! From next month I'm a {j2} at {c2}, goodbye {c1}."]))
        self.ask(self.phrase([f"What is {p}'s new job?", f"Where is {p} starting work next month?"],
                             [f"Who is {p}'s employer these days?", f"Where does {p} work now?"]),
                 "update", [[k2]], f"{j2} at {c2}", who)
        self.ask(self.phrase([f"What was {p}'s job at {c1}?"], [f"What was {p}'s previous occupation?"]),
                 "single", [[k1]], j1, who)

    def move(self, who: int) -> None:
        c1, c2 = self.rng.sample(CITIES, 2)
        p = self.names[who]
        s1 = self.sessions_between(0.0, 0.35)
        s2 = self.sessions_between(0.6, 0.95)
        k1 = self.news(s1, who, f"We finally signed the lease on a flat in {c1}, moving boxes everywhere.",
                       echo=f"{c1}! You'll love it there, {{p}}.")
        k2 = self.news(s2, who, self.pick([f"Okay don't freak out: we're moving again, to {c2}, in the spring.",
                                           f"Packing up again, we found a house in {c2} and we close in April."]),
                       echo=f"{c2}?! I'll miss having you close, {{p}}.")
        self.ask(self.phrase([f"Where is {p} moving to?", f"Which city is {p}'s new house in?"],
                             [f"Where is {p} based these days?", f"Which city does {p} live in now?"]),
                 "update", [[k2]], c2, who)
        self.ask(f"Which city did {p} leave for the last move?", "single", [[k1]], c1, who)

    def trip(self, who: int) -> None:
        city, country, sight = self.pick(TRIPS)
        p = self.names[who]
        s = self.sessions_between(0.1, 1.0)
        rel, days = self.pick([("last week", 7), ("two weeks ago", 14), ("over the long weekend", 4), ("last month", 30)])
        k = self.news(s, who, f"Just back from {city}! We went {rel} and {sight} was unreal.",
                      echo=f"{city} sounds like a dream, {{p}}!")
        went = self.dates[s] - timedelta(days=days)
        self.ask(self.phrase([f"When did {p} go to {city}?"], [f"When was {p}'s vacation in {country}?"]),
                 "temporal", [[k]], f"about {went:%d %B %Y} ({rel} before {self.dates[s]:%d %B %Y})", who)
        self.ask(self.phrase([f"What did {p} love most about {city}?"],
                             [f"What impressed {p} most while abroad in {country}?"]), "single", [[k]], sight, who)

    def race(self, who: int) -> None:
        (race, generic), cause = self.pick(RACES), self.pick(CAUSES)
        p = self.names[who]
        s = self.sessions_between(0.0, 1.0)
        rel, days = self.pick([("yesterday", 1), ("last Saturday", (self.dates[s].weekday() + 2) % 7 or 7),
                               ("last weekend", 7), ("on Sunday", (self.dates[s].weekday() + 1) % 7 or 7)])
        k = self.news(s, who, f"I did the {race} {rel}! Raised 840 dollars for {cause}.",
                      echo=f"The {race}?! You're unstoppable, {{p}}.")
        when = self.dates[s] - timedelta(days=days)
        self.ask(self.phrase([f"When did {p} do the {race}?"], [f"When did {p} compete in the {generic}?"]),
                 "temporal", [[k]], f"{when:%d %B %Y}", who)
        self.ask(self.phrase([f"What did {p} raise 840 dollars for?"], [f"Which cause did {p}'s fundraiser support?"]),
                 "single", [[k]], cause, who)

    def book(self, who: int) -> None:
        (title, author), p = self.pick(BOOKS), self.names[who]
        s = self.sessions_between(0.0, 1.0)
        k = self.news(s, who, f"I'm reading {title} by {author} and I can't put it down.",
                      echo=f"Ooh, {title}! Lend it to me when you're done, {{p}}?")
        self.ask(self.phrase([f"What book is {p} reading?"], [f"What novel has {p} been engrossed in?",
                                                                f"Which book was {p} hooked on?"]),
                 "single", [[k]], f"{title} by {author}", who)

    def food(self, who: int) -> None:
        bad, good, p = self.pick(DISLIKES), self.pick(LOVES), self.names[who]
        s = self.sessions_between(0.0, 1.0)
        k = self.news(s, who, f"Confession: I can't stand {bad}, but I could eat {good} every single day.",
                      echo=f"Haha, more {good} for you then, {{p}}.")
        self.ask(self.phrase([f"What can't {p} stand eating?"], [f"What food does {p} hate?"]),
                 "single", [[k]], bad, who)

    def injury(self, who: int) -> None:
        (hurt, how, part), p = self.pick(INJURIES), self.names[who]
        s = self.sessions_between(0.0, 1.0)
        rel, days = self.pick([("on Friday", (self.dates[s].weekday() + 3) % 7 or 7), ("yesterday", 1), ("last week", 7)])
        k = self.news(s, who, f"So I {hurt} {how} {rel}. Couch life for a while.", tone="bad",
                      echo=f"Your {part}?! Rest up, {{p}}.")
        when = self.dates[s] - timedelta(days=days)
        self.ask(self.phrase([f"What happened to {p}'s {part}?"], [f"How did {p} get injured?"]), "single", [[k]], how, who)
        self.ask(self.phrase([f"When did {p} hurt {p}'s {part}?"], [f"When did {p} get hurt?"]), "temporal", [[k]],
                 f"{when:%d %B %Y}", who)

    def vehicle(self, who: int) -> None:
        v1, v2 = self.rng.sample(VEHICLES, 2)
        p = self.names[who]
        s1 = self.sessions_between(0.0, 0.4)
        s2 = self.sessions_between(0.6, 1.0)
        self.news(s1, who, f"We bought {v1}! Used, but it runs great.", echo="Road trip in the new ride soon, {p}?")
        k2 = self.news(s2, who, f"We sold the old one and got {v2} instead, way more practical for us now.")
        self.ask(self.phrase([f"What did {p} get after they sold the old one?"], [f"What does {p} drive now?"]),
                 "update", [[k2]], v2, who)

    def exam(self, who: int) -> None:
        (exam, _), p = self.pick(EXAMS), self.names[who]
        s = self.sessions_between(0.1, 1.0)
        k = self.news(s, who, f"I passed {exam}!!! All those late nights paid off.",
                      echo="You passed! I knew you would, {p}!")
        self.ask(self.phrase([f"What exam did {p} pass?"], [f"Which test did {p} succeed at?"]),
                 "single", [[k]], exam, who)

    def tattoo(self, who: int) -> None:
        sign, p = self.pick(SIGNS), self.names[who]
        s = self.sessions_between(0.0, 1.0)
        k = self.news(s, who, f"I got my first tattoo, {sign} on my shoulder, to remember my grandma.",
                      echo="Send a pic of the ink, {p}!")
        self.ask(self.phrase([f"What is {p}'s tattoo of?"], [f"What design did {p} get inked?"]), "single", [[k]], sign, who)

    # ---- multi-hop and temporal order ---------------------------------------------------------

    def relative(self, who: int, person: str) -> None:
        """A relative introduced once, their news in a later session, asked about by relation."""
        rel, p = self.pick(RELATIONS), self.names[who]
        (job, place) = self.pick(JOBS)
        s1 = self.sessions_between(0.0, 0.5)
        s2 = min(len(self.dates) - 1, s1 + self.rng.randint(2, 10))
        k1 = self.news(s1, who, f"My {rel} {person} is staying with us for a bit, it's been fun having company.",
                       echo=f"Tell {person} I said hi, {{p}}!")
        k2 = self.news(s2, who, f"{person} got the job! {person} starts as a {job} at {place} in two weeks.",
                       echo=f"Yay {person}! Please pass on my congrats, {{p}}.")
        self.ask(self.phrase([f"What job did {p}'s {rel} get?"], [f"Where will {p}'s {rel} be working?"]),
                 "multi", [[k1], [k2]], f"{job} at {place}", who)

    def together(self, who: int, person: str) -> None:
        """Activities done with one friend over the year: a list question needs every one."""
        p = self.names[who]
        acts = self.rng.sample(ACTIVITIES, 3)
        keys = []
        slots = sorted(self.rng.sample(range(len(self.dates)), 3))
        for s, (did, _) in zip(slots, acts):
            keys.append([self.news(s, who, f"{person} and I {did} on Saturday, so much fun.",
                                   echo=f"You and {person} are always up to something, {{p}}!")])
        self.ask(self.phrase([f"What has {p} done with {person} this year?"], [f"What hobbies has {p} shared with {person}?"]),
                 "multi", keys, ", ".join(a for _, a in acts), who)

    def order(self, who: int) -> None:
        """Which of two events came first: both turns are needed."""
        p = self.names[who]
        a, b = self.rng.sample(ACTIVITIES, 2)
        s1, s2 = sorted(self.rng.sample(range(len(self.dates)), 2))
        first = self.news(s1, who, f"I {a[0]} yesterday, first time in ages.")
        second = self.news(s2, who, f"Today I {b[0]}, totally new for me.")
        pair = [a[1], b[1]]
        self.rng.shuffle(pair)
        self.ask(f"Did {p} try {pair[0]} or {pair[1]} first?", "temporal", [[first], [second]], a[1], who)

    def repeated(self, who: int, person: str) -> None:
        """A question asked in one session, answered by the other; asked again word for word later."""
        answerer = self.names[1 - who]
        place = self.pick(["the ramen place", "the bakery", "the campsite", "the bookshop", "the bar with the trivia night"])
        answer = self.pick(["Blue Lantern on 5th Street", "Maple & Rye near the station", "Cedar Flats by the river",
                            "Page Turner on Elm", "the Copper Kettle downtown"])
        s = self.sessions_between(0.0, 0.8)
        text = f"Wait, what was the name of {place} {person} recommended?"
        k = self.key()
        block = [(who, text, "question", ""), (1 - who, f"{answer}. {person} swears by it, go on a weekday.",
                                                "news", k),
                 (who, self.pick(THANKS).format(o=answerer), "smalltalk", "")]
        self.blocks[s].append(block)
        self.ask(text, "repeated", [[k]], answer, 1 - who)

    def developer(self, who: int) -> None:
        for statement, question, answer in self.rng.sample(DEV, 4):
            slots = {name: self.pick(values) for name, values in DEV_SLOTS.items()}
            s = self.sessions_between(0.0, 1.0)
            k = self.news(s, who, statement.format(**slots), echo="Ha, the glamorous life of a developer, {p}.")
            self.ask(question.format(**slots), "identifier", [[k]], answer.format(**slots), who)

    def never(self, who: int) -> None:
        p = self.names[who]
        for text in self.rng.sample([f"What is the name of {p}'s horse?", f"Which opera did {p} sing in?",
                                     f"What did {p} name the sailboat?", f"Which university did {p} teach chemistry at?",
                                     f"What color is {p}'s motorcycle?"], 2):
            self.ask(text, "none", [], "", who)

    def chatter(self) -> str:
        kind = self.rng.random()
        if kind < 0.3:
            return self.pick(CHATTER)
        if kind < 0.55:
            return self.pick(PEOPLE_CHATTER).format(r=self.pick(self.others))
        return self.pick(TOPIC_CHATTER).format(**{k: self.pick(v) for k, v in TOPIC_SLOTS.items()})

    # ---- assembling --------------------------------------------------------------------------

    def build(self) -> History:
        for who in (0, 1):
            for fact in (self.instrument, self.pet, self.job, self.move, self.trip, self.race, self.book, self.food,
                         self.injury, self.vehicle, self.exam, self.tattoo, self.order, self.never):
                if fact in (self.never, self.order) or self.rng.random() < 0.8:
                    fact(who)
            self.relative(who, self.others[who])
            self.together(who, self.others[2 + who])
            self.repeated(who, self.others[4 + who % 2])
        if self.dev:
            self.developer(self.rng.randrange(2))
        sessions: list[Session] = []
        where: dict[str, int] = {}
        index = 0
        for n, date in enumerate(self.dates):
            session = Session(date)
            opener = n % 2  # who opens alternates
            p, o = self.names[opener], self.names[1 - opener]
            turns = [(opener, self.pick(GREET).format(o=o), "smalltalk", ""),
                     (1 - opener, self.pick(GREET_BACK).format(p=p), "smalltalk", "")]
            blocks = list(self.blocks[n])
            for _ in range(self.rng.randint(3, 6)):
                speaker = self.rng.randrange(2)
                chatter = [(speaker, self.chatter(), "chatter", "")]
                if self.rng.random() < 0.5:
                    chatter.append((1 - speaker, self.chatter(), "chatter", ""))
                if self.rng.random() < 0.45:
                    chatter.append((1 - speaker if len(chatter) == 1 else speaker,
                                    self.pick(REACT_TO_CHATTER + FILLERS), "smalltalk", ""))
                blocks.append(chatter)
            self.rng.shuffle(blocks)
            for block in blocks:
                turns.extend(block)
            turns += [(opener, self.pick(BYE).format(o=o), "smalltalk", ""),
                      (1 - opener, self.pick(BYE_BACK).format(p=p), "smalltalk", "")]
            for speaker, text, label, k in turns:
                if k:
                    where[k] = index
                session.turns.append(Turn(speaker, text, label))
                index += 1
            sessions.append(session)
        for text in random.Random(self.seed + 7).sample(UNRELATED, 3):  # own stream: the rest stays as it was
            self.questions.append((text, "unrelated", [], "", ""))
        questions = [Question(text, kind, [[where[k] for k in group] for group in groups], answer, about)
                     for text, kind, groups, answer, about in self.questions]
        return History(self.seed, self.names, self.others, sessions, questions)


def history(seed: int) -> History:
    return _Builder(seed).build()


def histories(seed: int = 30, count: int = 10) -> list[History]:
    """`count` histories, the n-th built from seed*1000+n."""
    return [history(seed * 1000 + n) for n in range(count)]
