package rulecontroller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/eventdigest"
)

// ReasonKeysLeft is the Event reason of keys a guardrail keeps metawatch
// from writing (metawatch_keys_left_by_guardrail).
const ReasonKeysLeft = "KeysLeftByGuardrail"

// What an object is reported for never makes an Event of its own: each is
// an occurrence folded into one Event per reason, rule, kind and namespace
// (package eventdigest), regarding the Namespace, or for cluster-scoped
// objects the selectors ConfigMap. A million objects that start violating
// a new rule are one Event per namespace.

// eventNamespace is the namespace an object's occurrences are told in: its
// own, a Namespace object's name, "" for other cluster-scoped objects.
func eventNamespace(kind string, key types.NamespacedName) string {
	if key.Namespace == "" && kind == "Namespace" {
		return key.Name
	}
	return key.Namespace
}

// occur folds one object's occurrence of reason for rule into d.
func occur(d *eventdigest.Digest, kind string, key types.NamespacedName, reason, action, rule, message, detail string) {
	d.Add(eventdigest.Key{Type: corev1.EventTypeWarning, Reason: reason, Action: action, Rule: rule, Kind: kind, Namespace: eventNamespace(kind, key), Message: message},
		eventdigest.Occurrence{Object: key.Name, Detail: detail})
}

func missingMessage(rule string) string {
	return fmt.Sprintf("rule %s: objects missing required metadata", rule)
}

func conflictMessage(rule string) string {
	return fmt.Sprintf("rule %s wants keys another field manager owns with another value; not overwritten (set force: true on the rule to take them)", rule)
}

func takeoverFightMessage(rule string) string {
	return fmt.Sprintf("rule %s: another field manager took keys back more than %d times in %s; metawatch stops taking them back until their value changes or metawatch restarts: make the two controllers agree",
		rule, maxTakeovers, takeoverWindow)
}

func undoFightMessage(rule string) string {
	return fmt.Sprintf("rule %s: something else undid its writes of keys more than %d times in %s; metawatch leaves them as they are for a while (%s, then longer each round), then tries again: make the two controllers agree",
		rule, maxTakeovers, takeoverWindow, fightBackoff)
}

func leftMessage(rule, reason string) string {
	if rule == "" {
		return fmt.Sprintf("keys metawatch owns and no rule wants are left as they are: the guardrail %s forbids releasing them", reason)
	}
	return fmt.Sprintf("rule %s: keys left as they are: the guardrail %s forbids writing them", rule, reason)
}
