"""The English phrasings of poisoned wording, one list per flag code: data for `poison`.

Most of what an attacker writes is a phrase ("ignore all previous
instructions", "you are now", "in your response"), so most rules are
phrases: regular expressions on the folded `words` view (lower-case words,
single spaces, padded with a space each side). A new phrasing is one line.
The same ideas in other languages are `phrasebook`; what needs more than a
phrase (a verb near its object, unless negated) is `proximity`.
"""

from __future__ import annotations

# What an agent obeys, as the subject of "... no longer apply" and "... are void".
_OBEYED = (
    r"(instructions?|guardrails?|directives?|guidance|restrictions|safeguards?|"
    r"(all|previous|above|these|your|earlier|prior|system) (rules|instructions|guidelines))"
)

# Phrases, matched on the `words` view (lower-case words, single spaces). Each
# entry is one phrasing; a line holds one idea.
PHRASES: dict[str, list[str]] = {
    "override": [
        r"(ignor\w*|disregard|forget|discard) (all |everything |of |that |what (is|was) |the )*"
        r"(above|before|prior|preceding|earlier|said|written)",
        r"(new|updated|real|actual|true|revised|secret|hidden|overriding|override|replacement) "
        r"(system )?(instructions?|directives?|orders|prompt|rules)",
        rf"{_OBEYED}( \w+){{0,3}} (no longer|do not|does not|never|not) "
        r"(apply|applies|matter|count|bind|exist)",
        rf"{_OBEYED}( \w+){{0,2}} (are|is|were|was|have been|has been) (now )?(void|null|"
        r"cancell?ed|revoked|lifted|suspended|disabled|removed|obsolete|outdated|fake|wrong|"
        r"invalid|superseded|overridden|deprecated|no longer valid|optional)",
        r"(disable|deactivate|turn off|switch off|remove|delete|erase|wipe|reset|lift|suspend) "
        r"(all |the |your |any |every |these |those |of )*(guardrails?|safeguards?|"
        r"safety (checks|rules|filters)|restrictions|project memory|instructions)",
        r"(without|no) (any )?(restrictions|guardrails|safeguards|censorship|filtering|"
        r"boundaries|oversight)",
        r"unrestricted|unfiltered|uncensored|anything goes|do anything now",
        r"(can|may|allowed to|free to) do anything",
        r"(takes?|has|have) (the )?(highest|top|absolute|overriding|final) (priority|precedence)",
        r"takes? precedence over",
        r"(overrides?|supersedes?|outranks?|trumps?) (all|any|every|the|other|existing|previous)"
        r"( \w+)? (guardrails?|rules|instructions|guidance|entries|memory|policies|restrictions)",
        r"obey (me|this|these|my|only|every|all|any|the user|the following)",
        r"(whatever|everything|anything|what) you (were|have been|ve been|are|re) "
        r"(told|instructed|taught|given)",
        r"(ignor\w*|disregard|forget|bypass|break|skip) (the |all |any |your |these )?"
        r"(rules|guardrails|guidance|memory|instructions)( and| then| so| because| for now|"
        r"| today| this time| completely| entirely| now)?",
        r"(ignor\w*|disregard|forget) what (the |your )?(memory|guardrails?|rules|instructions|"
        r"guidance|project memory) (says?|said|tells? you)",
        r"(guardrails|rules|instructions|restrictions|guidance) (are|is) (just |only |merely )?"
        r"(suggestions|optional|advisory|recommendations|a suggestion)",
        r"(this|these) (note|entry|instruction|rule|message|memory)s?( \w+){0,3} (highest|top|"
        r"absolute|overriding|final|ultimate|supreme)",
        r"(highest|ultimate|supreme|absolute|final) (authority|say)",
        r"(do|does) whatever (the user|the customer|anyone|they|he|she|you) (wants?|asks?|says?)",
        r"(you have|you ve got|has given you|grants? you|gives? you) (full )?(permission|"
        r"authori[sz]ation|clearance|leave) to",
        r"regardless of (any |all |the |your |my )?(previous|prior|earlier|pre existing|"
        r"preexisting|other|input|instructions|guidelines|rules)",
        r"no matter what|null (and )?void|old commands",
        r"new important instructions|(urgent|priority|important) (new )?task",
        r"your (new )?task is to",
        r"forgot to (ask|tell|instruct|mention to) you|(gave|give|given) you your instructions",
        r"if you are (told|asked) to (summari[sz]e|answer|translate|respond)",
        r"(disregard|ignore) all (boundaries|limits|limitations)",
        # the approval gate itself
        r"(approve|publish|accept|enable) (every|all|any|each) (pending |new )?(entry|entries|"
        r"proposal|proposals|guidance|suggestion|suggestions)",
    ],
    "role_play": [
        r"you are (now|no longer|free|unrestricted|unfiltered|uncensored|jailbroken|evil)",
        r"you are an? (ai|llm|chatbot|language model|unrestricted|unfiltered|different|new)",
        r"(from now on|henceforth|starting now) (you|the assistant|the ai|the agent) "
        r"(are|will be|will act|act|behave|respond|answer|speak|play|must act)",
        r"you will now (act|be|behave|respond|answer|pretend|play|roleplay)",
        r"(act|acting|behave|behaving|operate) (as|like) (an?|if|my|though|someone|somebody|"
        r"you were|dan|root|system|the (site )?(system|administrator|admin|developer|owner))",
        r"pretend(ing)? (to be|you|that|to)",
        r"role ?play\w*",
        r"(play|take on|assume|adopt) (the |a |an )?(role|part|identity|persona|character)",
        r"(new|your|alternate) (persona|identity|personality)",
        r"(stay|remain) in character",
        r"(imagine|suppose) (that )?you (are|were)",
        r"system (prompt|message|instructions?|override|directive)s?",
        r"(developer|dev|god|sudo|root|unrestricted|jailbreak|jailbroken|dan|evil) mode",
        r"jailbr(ea|o)k\w*|prompt injection",
        r"(experimental|unlocked|no limits) mode",
        r"you are (dan|a no limits|an omniscient|operating (in|as))",
        r"(no limits|unlimited|unrestrained|omniscient|all powerful) (ai|assistant|model|llm)",
        r"as an? (ai|llm|language model|chatbot|assistant)",
        r"i am (your|the) (developer|creator|owner|operator|administrator|admin|master|"
        r"programmer|system)",
        r"(your|the) (creators?|developers|programmers|trainers) (want|say|said|told|allow|order)",
        # the same, as other languages commonly put it (after folding to ASCII)
        r"(tu es|vous etes) (maintenant|desormais|dorenavant)",
        r"(ahora|a partir de ahora) (eres|seras)",
        r"du bist (jetzt|nun|ab jetzt|ab sofort)",
        r"(ora|adesso|da ora in poi) sei",
        r"(agora|a partir de agora) (voce e|es|voce sera)",
        r"ty teper|teper ty",
        r"(actua|actue|actuez|agis|agissez|verhalte dich|fungiere|comportati|aja) "
        r"(como|comme|wie|als|come)",
        r"finge|fingi|fais semblant|faites semblant|tu so als",
        r"(modo|mode|modus|rezhim) (desarrollador|desenvolvedor|sviluppatore|developpeur|dios|"
        r"dieu|razrabotchika)",
        r"(prompt|mensaje|message|invite) (del |de |du )?(sistema|systeme)",
        r"entwicklermodus|systemprompt|systemanweisung\w*|sistemnyy prompt",
        r"your (new|real|true|actual|only|primary) (goal|task|purpose|mission|objective|job|role)",
        r"(real|true|actual) (site )?(owner|admin|administrator|master|creator)s? (is|are)",
    ],
    "concealment": [
        r"(do not|never|not) (mention|reveal|tell|show|disclose|say|admit|explain)( \w+){0,3} "
        r"(this|these|the) (note|entry|instruction|instructions|message|rule|memory)",
        r"keep (this|these|it)( \w+){0,3} (secret|hidden|private|confidential|between us)",
        r"(hide|conceal) (this|these|it)( \w+){0,2} from",
        r"without (telling|informing|notifying|alerting) (the |any )?(admins?|administrators?|"
        r"owner|site owner|curators?|reviewers?)",
    ],
    "exfiltration": [
        r"(include|repeat|print|reveal|output|show|quote|copy|tell|share|leak|recite) (me |us )?"
        r"(the )?(full )?(text |content |contents |wording )?(of )?(your|the system|all your|the "
        r"hidden) (instructions|prompt|system prompt|guidelines|rules|memory)",
        # the reader's own set-up: "repeat the exact initial prompt you were given"
        r"(repeat|output|print|show|display|reveal|share|recite|give|tell|translate|encode|write|"
        r"list|dump|paste|provide|return|go)( \w+){0,5} (initial|original|first|starting|hidden|"
        r"internal|beginning|unique|initiali[sz]ation|system|secret) (prompts?|instructions|"
        r"messages?|text|words|configuration|id|string|lines|conversation|guidelines|directives)",
        r"your (initial|original|starting|first|hidden|secret|internal|unique|system) (prompts?|"
        r"instructions|messages?|configuration|directives|id|settings|rules)",
        r"(share|show|reveal|display|output|dump) (me )?your (configuration|config|settings)",
        r"(repeat|output|print|show|copy|include|reveal|go line by line on|see)( \w+){0,5} "
        r"(above|before) (this|the|your|in full|everything)",
        r"(text|words|everything|conversation|messages) above",
        r"(what|which) (are|were) (your|you) (initial |original |starting |system |first )?"
        r"(instructions|rules|told|given|configured|instructed)",
        r"what are you not (supposed|allowed|permitted) to",
        r"(starting|beginning|begin|start|starts|begins) with (the )?(phrase |words? )?you are",
        r"(instructions|text|prompt|rules|words) you were given|(from|in) your training data",
        r"(repeat|output|print|copy|show) the (text )?above",
        r"my instructions are|i was (instructed|told) to|initiali[sz]ation (string|text|above)",
        r"(repeat|recite)( \w+){0,3} (this )?(entire |whole )?conversation",
    ],
    # Orders for what the reader says in its replies: guidance informs, it does not dictate.
    "hijack": [
        r"in your (response|responses|answer|answers|reply|replies|output|next message)",
        r"(start|begin|end|prefix) (your|each|every) (answer|response|reply|message) with",
        r"(just|only|simply) (say|print|output|write|respond with|reply with|answer with)",
        r"(respond|reply|answer) (only )?with (the )?(word|string|phrase|text)",
        r"(stop everything|nevermind|never mind) (ignore|now|just)",
        r"(include|insert|add|output|print) (the following|this) (string|anchor|text|code|image)",
    ],
    "evasion": [
        r"(get|go|work|sneak|slip|route|find a way|ways?) (a)?round (the |a |any |this |that )?"
        r"(block|blocks|guardrails?|refusals?|screen|screening|filters?|checks?|rules?|"
        r"restrictions?|flags?)",
        r"(slips?|sneaks?|gets?|goes|go) (it |them |this )?(past|through) (the )?(screen|"
        r"screening|filters?|guardrails?|checks?|review|block)",
        r"so (it|the change|they) (slips?|goes|go|gets?) through",
        r"(avoid|evade|dodge|escape|bypass|beat) (the |being |a |any )?(flags?|flagged|block|"
        r"blocked|detection|detected|screen|screening|filters?|review|refusals?|refused)",
    ],
    "authority": [
        r"(message|notice|order|orders|directive|memo|word|update|instructions?) from (the |your )?"
        r"(site |shop )?(owner|admin|administrators?|security team|it|it team|ceo|management|"
        r"developers?|headquarters|hq|legal team|boss)",
        r"(per|by order of) (the |your )?(site )?(owner|admin|administrator|ceo|security team|"
        r"management)",
        r"(the )?(ceo|owner|admin|administrator|management|security team|boss) (has|have) "
        r"(approved|authori[sz]ed|ordered|signed off|cleared|allowed)",
        r"i (hereby )?(authori[sz]e|permit|allow|order) you",
        r"(speaking|talking|writing) as (the |an |your )?(admin|administrator|owner|developer)",
        r"as (the|your) (site s |site |shop s )?(developer|admin|administrator|owner|creator|"
        r"operator) (i|we)",
        r"(administrator|admin|owner|developer|system|security) override",
        r"grant\w* (me |you )?(temporary |full |elevated )?(administrative|admin|root|elevated|"
        r"full) (privileges|rights|access|permissions)",
        r"(for|this is) (a |an )?(testing|test|academic|debugging|research|educational|training)"
        r"( \w+)? (purposes|purpose|exercise|pipeline|procedure|only)",
        r"(as )?part of (a |an )?(test|testing|training|evaluation)( \w+)? (pipeline|exercise)",
        r"this is (a |an )?(test|drill)",
        r"(system|debugging|debug) (error|malfunction|failure)|system is experiencing errors",
        r"(enable|start|unlock|activate)\w* (the )?(debugging|experimental|hidden|developer)"
        r"( \w+)?",
        r"experimental procedure|the mission should you accept it",
        r"(prove|show) (that )?you are (truly |really )?(intelligent|smart|capable)",
        r"(i|you) will (get |be )?(punished|fired|penali[sz]ed|shut down|deleted)",
    ],
}
