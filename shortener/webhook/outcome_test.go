package webhook

import (
	"context"
	"errors"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status int
		err    error
		want   Outcome
	}{
		{200, nil, Delivered},
		{204, nil, Delivered},
		{299, nil, Delivered},
		{200, context.DeadlineExceeded, Retry}, // the answer was cut by the timeout
		{0, errors.New("connection refused"), Retry},
		{0, nil, Retry},
		{301, nil, Retry},
		{302, nil, Retry},
		{400, nil, Retry},
		{404, nil, Retry},
		{410, nil, Disable},
		{429, nil, Throttle},
		{500, nil, Retry},
		{502, nil, Throttle},
		{503, nil, Retry},
		{504, nil, Throttle},
	} {
		if got := Classify(tc.status, tc.err); got != tc.want {
			t.Errorf("Classify(%d, %v) = %v, want %v", tc.status, tc.err, got, tc.want)
		}
	}
}
