package openai

import "strings"

// whisperLanguages maps the language names Whisper reports in verbose JSON
// (its tokenizer's names, and their common aliases) to ISO-639-1 codes.
// Cantonese and Hawaiian have no ISO-639-1 code and keep Whisper's ISO-639-3
// one; Javanese is "jv", not Whisper's "jw".
var whisperLanguages = map[string]string{
	"afrikaans": "af", "albanian": "sq", "amharic": "am", "arabic": "ar", "armenian": "hy",
	"assamese": "as", "azerbaijani": "az", "bashkir": "ba", "basque": "eu", "belarusian": "be",
	"bengali": "bn", "bosnian": "bs", "breton": "br", "bulgarian": "bg", "burmese": "my",
	"cantonese": "yue", "castilian": "es", "catalan": "ca", "chinese": "zh", "croatian": "hr",
	"czech": "cs", "danish": "da", "dutch": "nl", "english": "en", "estonian": "et",
	"faroese": "fo", "finnish": "fi", "flemish": "nl", "french": "fr", "galician": "gl",
	"georgian": "ka", "german": "de", "greek": "el", "gujarati": "gu", "haitian": "ht",
	"haitian creole": "ht", "hausa": "ha", "hawaiian": "haw", "hebrew": "he", "hindi": "hi",
	"hungarian": "hu", "icelandic": "is", "indonesian": "id", "italian": "it", "japanese": "ja",
	"javanese": "jv", "kannada": "kn", "kazakh": "kk", "khmer": "km", "korean": "ko",
	"lao": "lo", "latin": "la", "latvian": "lv", "letzeburgesch": "lb", "lingala": "ln",
	"lithuanian": "lt", "luxembourgish": "lb", "macedonian": "mk", "malagasy": "mg", "malay": "ms",
	"malayalam": "ml", "maltese": "mt", "mandarin": "zh", "maori": "mi", "marathi": "mr",
	"moldavian": "ro", "moldovan": "ro", "mongolian": "mn", "myanmar": "my", "nepali": "ne",
	"norwegian": "no", "nynorsk": "nn", "occitan": "oc", "panjabi": "pa", "pashto": "ps",
	"persian": "fa", "polish": "pl", "portuguese": "pt", "punjabi": "pa", "pushto": "ps",
	"romanian": "ro", "russian": "ru", "sanskrit": "sa", "serbian": "sr", "shona": "sn",
	"sindhi": "sd", "sinhala": "si", "sinhalese": "si", "slovak": "sk", "slovenian": "sl",
	"somali": "so", "spanish": "es", "sundanese": "su", "swahili": "sw", "swedish": "sv",
	"tagalog": "tl", "tajik": "tg", "tamil": "ta", "tatar": "tt", "telugu": "te",
	"thai": "th", "tibetan": "bo", "turkish": "tr", "turkmen": "tk", "ukrainian": "uk",
	"urdu": "ur", "uzbek": "uz", "valencian": "ca", "vietnamese": "vi", "welsh": "cy",
	"yiddish": "yi", "yoruba": "yo",
}

// languageCode maps the language a provider reports to its ISO-639-1 code:
// a Whisper language name is looked up (ignoring case and surrounding
// space), and anything else, such as a code some servers report, is kept as
// given.
func languageCode(lang string) string {
	lang = strings.TrimSpace(lang)
	if code, ok := whisperLanguages[strings.ToLower(lang)]; ok {
		return code
	}
	return lang
}
