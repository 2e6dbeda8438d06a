"""Word lists that type a name: places, organisation and product words, first names.

Small on purpose: a name is typed first by who speaks (the conversation's people), then
by what the tenant already knows, then by the words around it (names.py); these lists
settle the common cases the context leaves open ("in Paris" is a place by its cue,
"Paris is lovely" by this list). Lower case; multi-word entries are matched whole.
"""

from __future__ import annotations

from app.services.facts.offline.lexicon import word_set

_COUNTRIES = """
afghanistan albania algeria argentina armenia australia austria bahamas bangladesh belgium
bolivia brazil bulgaria cambodia cameroon canada chile china colombia croatia cuba cyprus
czechia denmark ecuador egypt england estonia ethiopia fiji finland france georgia germany
ghana greece guatemala haiti honduras hungary iceland india indonesia iran iraq ireland
israel italy jamaica japan jordan kenya korea laos latvia lebanon lithuania luxembourg
madagascar malaysia mali malta mexico mongolia montenegro morocco nepal netherlands
nicaragua nigeria norway pakistan panama paraguay peru philippines poland portugal qatar
romania russia rwanda scotland senegal serbia singapore slovakia slovenia somalia spain
sudan sweden switzerland syria taiwan tanzania thailand tunisia turkey uganda ukraine
uruguay venezuela vietnam wales yemen zambia zimbabwe america usa uk africa asia europe
antarctica oceania caribbean scandinavia
"""
_REGIONS = """
alabama alaska arizona arkansas california colorado connecticut delaware florida hawaii
idaho illinois indiana iowa kansas kentucky louisiana maine maryland massachusetts michigan
minnesota mississippi missouri montana nebraska nevada ohio oklahoma oregon pennsylvania
tennessee texas utah vermont virginia washington wisconsin wyoming ontario quebec bavaria
tuscany bali hawaii alps himalayas sahara amazon yosemite yellowstone
"""
_CITIES = """
amsterdam athens atlanta austin bangkok barcelona beijing berlin boston brussels budapest
cairo chicago copenhagen dallas delhi denver detroit dubai dublin edinburgh florence geneva
hamburg helsinki houston istanbul jakarta jerusalem kyoto lagos lisbon london madrid
manchester melbourne miami milan montreal moscow mumbai munich nairobi naples nashville
oslo paris philadelphia phoenix portland prague reykjavik rome seattle seoul shanghai
singapore stockholm sydney tokyo toronto vancouver venice vienna warsaw zurich orlando
vegas brooklyn manhattan hollywood oxford cambridge nyc
"""
PLACES = word_set(_COUNTRIES + _REGIONS + _CITIES) | frozenset(
    {
        "new york", "los angeles", "san francisco", "san diego", "new orleans", "las vegas",
        "hong kong", "new zealand", "south africa", "united states", "united kingdom",
        "costa rica", "puerto rico", "north carolina", "south carolina", "new jersey",
        "new mexico", "north dakota", "south dakota", "west virginia", "rhode island",
        "grand canyon", "rocky mountains", "new hampshire", "sri lanka", "saudi arabia",
        "great barrier reef", "niagara falls", "the netherlands",
    }
)  # fmt: skip

# The last word of a name that makes it a place, an organisation or an event
PLACE_HEADS = word_set(
    """
    city town village county state province island islands beach bay lake lakes river
    mountain mountains mount mt park canyon valley falls forest desert coast street st
    avenue ave road rd square lane boulevard trail peak hills hill harbor harbour
    national springs garden gardens zoo
    """
)
ORGANIZATION_HEADS = word_set(
    """
    university college school academy institute inc corp corporation company co ltd llc
    club foundation association society church center centre hospital clinic bank team
    agency department council committee union league party group studio studios records
    labs lab network shelter charity organization organisation ministry museum library
    cafe café restaurant bakery shop store market bar gym
    """
)
EVENT_HEADS = word_set(
    """
    festival conference parade concert fair marathon race tournament championship cup
    olympics expo summit convention show gala ceremony wedding party rally
    """
)
EVENTS = word_set(
    """
    christmas thanksgiving halloween easter hanukkah diwali ramadan eid passover pride
    valentine's new year's
    """
)

# Organisations named alone often enough that no context types them
ORGANIZATIONS = word_set(
    """
    google microsoft apple amazon meta ibm intel nvidia oracle walmart starbucks costco ikea
    nasa fbi cia unicef unesco nato fifa nba nfl mlb nhl bbc cnn nyt ymca harvard stanford
    mit yale princeton berkeley disney pixar nike adidas samsung sony boeing airbus ferrari
    porsche lamborghini mercedes
    """
)

# Brands and products people name in conversation
PRODUCTS = word_set(
    """
    iphone ipad macbook mac android pixel galaxy kindle playstation ps4 ps5 xbox nintendo
    switch tesla prius fitbit airpods alexa siri roomba instagram facebook tiktok twitter
    youtube netflix spotify hulu uber lyft zoom slack whatsapp snapchat pinterest reddit
    linkedin minecraft fortnite zelda pokemon pokémon chatgpt photoshop excel lego legos
    jeep toyota honda ford bmw audi subaru volkswagen harley yamaha canon nikon gopro
    """
)
PRODUCT_CUE_WORDS = word_set("my new old bought got playing play played using use drive drives")

# First names common enough to type a name as a person with no other evidence
FIRST_NAMES = word_set(
    """
    aaron adam alex alice amanda amy andrew andy angela anna anne anthony ashley barbara ben
    benjamin beth betty bill bob brian carl carol caroline catherine charles charlie chris
    christine christopher daniel david deborah debbie dennis diana donald donna dorothy edward
    elizabeth emily emma eric evan frank gary george grace greg hannah harry helen henry jack
    jacob james jane janet jason jeff jennifer jenny jessica jim joan joe john jon jonathan
    joseph josh joshua julia julie karen kate katie keith kelly ken kevin kim larry laura
    lauren linda lisa liz lucy luke maria mark martha mary matt matthew max megan melanie
    melissa michael michelle mike nancy natalie nate nick nicole olivia oscar pam patricia
    paul peter rachel rebecca richard rob robert ron ryan sam samantha sandra sara sarah scott
    sean sharon sophia sophie stephanie steve steven susan tim timothy tom tony tyler victoria
    william zoe nate dave jake mia noah liam ethan ava isabella mason logan lily chloe leo
    oliver jasmine kyle derek maya luna bella rosa jose juan carlos luis miguel ahmed ali
    mohammed fatima priya raj wei li yuki hiro kenji
    """
)
