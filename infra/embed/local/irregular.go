package local

import (
	"strings"
	"sync"
)

// irregularBase maps English irregular inflections that the Porter stemmer
// cannot join to their base form: the past tense and past participle of the
// common irregular verbs ("went", "gone" → "go"; "bought" → "buy") and
// irregular noun plurals ("children" → "child"). Questions about a memory
// are usually phrased with the base form ("where did she go?", "what did
// he buy?") while the memory itself narrates in the past ("I went ...",
// "I bought ..."), so without this the two share no word at all. Regular
// forms ("painted", "painting") are left to the stemmer.
//
// Forms that are more often another word than the verb are left out: "bit"
// ("a bit"), "born", "bound", "ground", "wound", "rose", "fell", "bore";
// forms identical to the base ("read", "put", "cut", "set", "hit") need no
// entry.
//
// It is built at first use, not at every engram process's start.
var irregularBase = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	// Each line: base form, then its irregular past and participle forms.
	for _, line := range strings.Split(`arise arose arisen
awake awoke awoken
be was were been
beat beaten
become became
begin began begun
bend bent
bleed bled
blow blew blown
break broke broken
breed bred
bring brought
build built
burn burnt
buy bought
catch caught
choose chose chosen
cling clung
come came
creep crept
deal dealt
dig dug
do did done
draw drew drawn
dream dreamt
drink drank drunk
drive drove driven
eat ate eaten
fall fallen
feed fed
feel felt
fight fought
find found
flee fled
fly flew flown
forbid forbade forbidden
forget forgot forgotten
forgive forgave forgiven
freeze froze frozen
get got gotten
give gave given
go went gone
grow grew grown
hang hung
have had
hear heard
hide hid hidden
hold held
keep kept
kneel knelt
know knew known
lay laid
lead led
lean leant
leap leapt
learn learnt
leave left
lend lent
lie lain
light lit
lose lost
make made
mean meant
meet met
pay paid
prove proven
ride rode ridden
ring rang rung
rise risen
run ran
say said
see saw seen
seek sought
sell sold
send sent
shake shook shaken
shine shone
shoot shot
show shown
shrink shrank shrunk
sing sang sung
sink sank sunk
sit sat
sleep slept
slide slid
speak spoke spoken
speed sped
spend spent
spin spun
spit spat
spring sprang sprung
stand stood
steal stole stolen
stick stuck
sting stung
stink stank stunk
strike struck stricken
string strung
strive strove striven
swear swore sworn
sweep swept
swim swam swum
swing swung
take took taken
teach taught
tear tore torn
tell told
think thought
throw threw thrown
tread trod trodden
understand understood
wake woke woken
wear wore worn
weave wove woven
weep wept
win won
write wrote written
child children
man men
woman women
person people
foot feet
tooth teeth
mouse mice
goose geese`, "\n") {
		f := strings.Fields(line)
		for _, form := range f[1:] {
			m[form] = f[0]
		}
	}
	return m
})

// timeFeature is the one feature all time words share.
var timeFeature = featureHash(kindClass, "time")

// timeWords are the words that say when something happened, plus "when"
// itself, the word that asks it. "may" is left out: it is far more often
// the modal verb than the month. Built at first use.
var timeWords = sync.OnceValue(func() map[string]struct{} {
	return makeSet(`
when yesterday today tonight tomorrow ago recently lately
morning afternoon evening weekend weekends week weeks month months year years
monday tuesday wednesday thursday friday saturday sunday
january february march april june july august september october november december
`)
})

// isTimeWord reports whether a lower-cased word is a time word: one of
// timeWords or a year from 1900 to 2099.
func isTimeWord(w string) bool {
	if _, ok := timeWords()[w]; ok {
		return true
	}
	if len(w) != 4 || (w[:2] != "19" && w[:2] != "20") {
		return false
	}
	for i := 2; i < 4; i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return true
}
