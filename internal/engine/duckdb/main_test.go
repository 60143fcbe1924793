package duckdb_test

import (
	"os"
	"testing"

	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

func TestMain(m *testing.M) { os.Exit(publishtest.Main(m)) }
